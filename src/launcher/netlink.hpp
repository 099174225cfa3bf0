#pragma once
// A small netlink request builder and a synchronous transaction (netlink(7), rtnetlink(7),
// and the nf_tables batch protocol): enough to add a few routes, a routing rule and an
// nftables chain from the jail's first process without running `ip` or `nft` (each would cost
// a fork and an exec, milliseconds the launcher's start cannot spare, and a host binary run
// with privileges inside the jail).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace airlock::launcher::netlink {

// Messages of one request, appended one after the other; attributes nest.
class request {
 public:
  // Starts a message (nlmsghdr) with the given type and flags; the payload header (rtmsg,
  // fib_rule_hdr, nfgenmsg...) follows as raw bytes.
  void begin(std::uint16_t type, std::uint16_t flags, std::span<const std::uint8_t> header);
  void end();  // closes the message: its length is final

  void attr(std::uint16_t type, std::span<const std::uint8_t> value);
  void attr_u8(std::uint16_t type, std::uint8_t v);
  void attr_u32(std::uint16_t type, std::uint32_t v);     // host byte order (rtnetlink)
  void attr_be32(std::uint16_t type, std::uint32_t v);    // network byte order (nf_tables)
  void attr_str(std::uint16_t type, std::string_view s);  // NUL-terminated
  std::size_t nest_begin(std::uint16_t type);             // NLA_F_NESTED
  void nest_end(std::size_t at);

  std::span<const std::uint8_t> bytes() const noexcept { return data_; }
  // Sequence numbers of the messages that asked for an acknowledgement.
  const std::vector<std::uint32_t>& acked() const noexcept { return acked_; }

 private:
  void align();

  std::vector<std::uint8_t> data_;
  std::size_t message_start_ = 0;
  std::uint32_t next_seq_ = 1;
  std::vector<std::uint32_t> acked_;
};

// Sends req on a new netlink socket of the given protocol and waits for the acknowledgement
// of every message that asked for one. False with the failure recorded (step.hpp): the first
// error the kernel returned, named by what.
bool transact(int protocol, const request& req, std::string_view what);

}  // namespace airlock::launcher::netlink
