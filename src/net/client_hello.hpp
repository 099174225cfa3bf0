#pragma once
// Reads the server name (SNI) and ALPN list out of the first bytes a client sends into a
// CONNECT tunnel, without terminating TLS. The ClientHello may be split across several TLS
// records and TCP segments; parse() is given everything received so far and says whether it
// needs more.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace airlock::net {

enum class hello_status {
  need_more,  // a valid prefix of a ClientHello; read more and call again
  complete,   // a whole ClientHello was parsed
  not_tls,    // the bytes are not a TLS handshake record
  malformed   // looks like TLS but violates the format
};

struct client_hello {
  hello_status status = hello_status::need_more;
  std::optional<std::string> server_name;  // host_name entry of server_name extension, as sent
  std::vector<std::string> alpn;
};

// Limit on how much a ClientHello may occupy before it is called malformed (post-quantum key
// shares make hellos large; 64 KiB leaves ample room).
inline constexpr std::size_t max_client_hello_bytes = 64 * 1024;

client_hello parse_client_hello(std::span<const std::uint8_t> data);

}  // namespace airlock::net
