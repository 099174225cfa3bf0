#pragma once
// Reads the server name (SNI) and ALPN list out of the first bytes a client sends into a
// CONNECT tunnel, without terminating TLS. The ClientHello may be split across several TLS
// records and TCP segments; parse() is given everything received so far and says whether it
// needs more. Every strict prefix of a valid hello gives need_more; a verdict other than
// need_more never changes when more bytes arrive; and once max_client_hello_bytes have
// arrived the verdict is never need_more, so a caller that reads at most that much always
// gets an answer.
//
// Strictness (all `malformed`): a record of another type inside the hello, zero-length or
// over-2^14 records, any length field that disagrees with its container, a repeated extension
// type (RFC 8446 section 4.2), a server_name or ALPN extension with trailing bytes, empty
// names, two host_name entries (RFC 6066 section 3), more than 128 ALPN protocols. Bytes after
// the hello are ignored. An empty input is need_more.
//
// Thread safety: a pure function.

#include <cstddef>
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
  // host_name entry of the server_name extension, byte for byte as sent (case, a trailing dot,
  // anything): compare it only after normalize_host().
  std::optional<std::string> server_name;
  std::vector<std::string> alpn;  // ALPN protocol names in the client's order
  // server_name and alpn are set only when status == complete.
};

// Limit on how much a ClientHello may occupy before it is called malformed (post-quantum key
// shares make hellos large; 64 KiB leaves ample room).
inline constexpr std::size_t max_client_hello_bytes = 64 * 1024;

client_hello parse_client_hello(std::span<const std::uint8_t> data);

}  // namespace airlock::net
