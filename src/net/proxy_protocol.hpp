#pragma once
// PROXY protocol version 2 (https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt,
// section 2.2): the binary header the relay sends as the first bytes of each connection to
// the proxy, so the proxy learns which agent is speaking from the launcher, not from the
// agent. Pure functions: no I/O.
//
// Our TLVs, in the custom range PP2_TYPE_MIN_CUSTOM..PP2_TYPE_MAX_CUSTOM (0xE0..0xEF):
//   0xE0 agent     the agent's name (always present)
//   0xE1 binary    the connecting program's executable path inside the jail (UTF-8 bytes, no
//                  NUL); absent when the relay found no identity (net/peer_binary.hpp)
//   0xE2 sha256    its SHA-256, 64 lower-case hex characters; only with 0xE1
//   0xE3 ancestors the ancestor chain, parent first, each entry NUL-terminated; only with 0xE1
// The proxy trusts them only on its relay listener (listen.relay), never on the proxy port.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/peer_binary.hpp"

namespace airlock::net::proxy_v2 {

inline constexpr std::array<std::uint8_t, 12> signature = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                           0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
inline constexpr std::uint8_t tlv_agent = 0xE0;
inline constexpr std::uint8_t tlv_binary = 0xE1;
inline constexpr std::uint8_t tlv_binary_sha256 = 0xE2;
inline constexpr std::uint8_t tlv_binary_ancestors = 0xE3;
inline constexpr std::size_t header_size = 16;  // signature, ver_cmd, fam, len

enum class command : std::uint8_t { local = 0x0, proxy = 0x1 };

// An IPv4 or IPv6 TCP endpoint, address in network byte order.
struct endpoint {
  bool v6 = false;
  std::array<std::uint8_t, 16> addr{};  // first 4 bytes used for IPv4
  std::uint16_t port = 0;               // host byte order
};

struct tlv {
  std::uint8_t type = 0;
  std::string value;
};

struct header {
  command cmd = command::proxy;
  // Both set and of the same family for AF_INET/AF_INET6 over STREAM; both unset means
  // AF_UNSPEC (no address block), as LOCAL connections use.
  std::optional<endpoint> source;
  std::optional<endpoint> destination;
  std::vector<tlv> tlvs;
};

// The encoded header, or nullopt when it cannot be encoded: one address without the other,
// mixed families, or a total length over 65535 - 16 bytes.
std::optional<std::vector<std::uint8_t>> encode(const header& h);

// The common case: a PROXY header for source -> destination carrying the agent name.
std::optional<std::vector<std::uint8_t>> encode_agent(const endpoint& source,
                                                      const endpoint& destination,
                                                      std::string_view agent);

// The identity TLVs (0xE1..0xE3) for a binary, appended to h.tlvs.
void add_binary(header& h, const peer_binary& binary);

// Result of decode(): the header and how many bytes of the input it took.
struct decoded {
  header value;
  std::size_t consumed = 0;
};

// Decodes a complete header at the start of data; nullopt if it is malformed or incomplete
// (for tests, and for the proxy side that will accept these headers).
std::optional<decoded> decode(std::span<const std::uint8_t> data);

// Convenience for the agent TLV of a decoded header.
std::optional<std::string> agent_of(const header& h);

// The binary of a decoded header: nullopt without a well-formed 0xE1 (empty, or holding a NUL)
// and a 64-hex-digit 0xE2; ancestors are optional.
std::optional<peer_binary> binary_of(const header& h);

}  // namespace airlock::net::proxy_v2
