#pragma once
// The DNS wire format, as much of it as the jail's resolver needs (RFC 1035 section 4.1):
// read one query, write one reply. Pure functions on byte spans; nothing here knows where a
// datagram came from or what the answer should be (resolver.hpp decides that).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace airlock::launcher::dns {

inline constexpr std::uint16_t type_a = 1;      // RFC 1035 section 3.2.2
inline constexpr std::uint16_t type_aaaa = 28;  // RFC 3596
inline constexpr std::uint16_t type_opt = 41;   // RFC 6891
inline constexpr std::uint16_t class_in = 1;
inline constexpr std::size_t header_size = 12;
// A UDP reply never grows past this (RFC 1035 section 4.2.1 without EDNS); ours are far
// smaller, so truncation (TC) never happens.
inline constexpr std::size_t max_udp_size = 512;

enum class rcode : std::uint8_t {
  no_error = 0,
  format_error = 1,
  server_failure = 2,
  name_error = 3,  // NXDOMAIN
  not_implemented = 4,
  refused = 5,
};

struct query {
  std::uint16_t id = 0;
  std::uint8_t opcode = 0;
  bool recursion_desired = false;
  // The name in lower case, labels joined by '.', no trailing dot; "" is the root.
  std::string name;
  // False when a label holds a byte that no host name has (RFC 952/1123 letters, digits,
  // '-', plus '_' that service names use); such a name is never looked up.
  bool name_is_hostname = true;
  std::uint16_t type = 0;
  std::uint16_t klass = 0;
  bool edns = false;  // an OPT record came with it (RFC 6891): the reply carries one too
  // The question exactly as sent (name in its original case, type, class): replies echo it,
  // as resolvers that randomise the case of names (draft-vixie-dnsext-dns0x20) expect.
  std::vector<std::uint8_t> question;
};

// What parse_query made of a datagram.
struct parsed_query {
  std::optional<query> value;  // set when the query can be answered
  // Otherwise: whether to reply at all (never to a response, nor to fewer than 12 bytes, so
  // two resolvers cannot be made to talk to each other) and with which error.
  bool reply = false;
  rcode error = rcode::format_error;
};

parsed_query parse_query(std::span<const std::uint8_t> datagram);

// One address record of an answer: 4 bytes for A, 16 for AAAA.
struct address_record {
  std::uint16_t type = type_a;
  std::array<std::uint8_t, 16> address{};
};

// The reply to q: its question echoed, then the answers (names compressed to the question),
// and an OPT record when the query had one.
std::vector<std::uint8_t> make_reply(const query& q, rcode code,
                                     std::span<const address_record> answers, std::uint32_t ttl);

// A reply without a question, for a query too broken to parse (FORMERR, NOTIMP): the id and
// opcode are copied from its header. Needs header_size bytes of the query.
std::vector<std::uint8_t> make_header_reply(std::span<const std::uint8_t> datagram, rcode code);

}  // namespace airlock::launcher::dns
