#pragma once
// Reads the server name (SNI) and ALPN list out of the first bytes a client sends into a
// CONNECT tunnel, without terminating TLS. The ClientHello may be split across several TLS
// records and TCP segments; the parser is given everything received so far and says whether it
// needs more. Every strict prefix of a valid hello gives need_more; a verdict other than
// need_more never changes when more bytes arrive; and once max_client_hello_bytes have
// arrived the verdict is never need_more, so a caller that reads at most that much always
// gets an answer.
//
// Strictness (all `malformed`): a record of another type inside the hello, zero-length or
// over-2^14 records, a hello spread over more than max_client_hello_records records, any length
// field that disagrees with its container, a repeated extension type (RFC 8446 section 4.2), a
// server_name or ALPN extension with trailing bytes, empty names, two host_name entries
// (RFC 6066 section 3), more than 128 ALPN protocols. Bytes after the hello are ignored. An
// empty input is need_more.
//
// Thread safety: parse_client_hello is a pure function; a client_hello_parser belongs to one
// connection.

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

// Limit on how many TLS records a ClientHello may span. RFC 8446 section 5.1 allows handshake
// fragments of one byte, but real clients send one record (two or three for post-quantum key
// shares); a hello in thousands of tiny records only makes the proxy work per record.
inline constexpr std::size_t max_client_hello_records = 16;

// The parser of one connection's first bytes, fed as they arrive: each call gets everything
// received so far (the previous call's bytes, then more) and resumes where the previous one
// stopped, so the work is linear in the bytes however finely they are split (the bytes of a
// record header that has not fully arrived are looked at again, at most five).
class client_hello_parser {
 public:
  // The verdict on `data` (once final, the same verdict whatever follows).
  const client_hello& parse(std::span<const std::uint8_t> data);

 private:
  const client_hello& finish(hello_status status);

  client_hello out_;
  std::size_t pos_ = 0;          // bytes of the input taken in so far
  std::size_t record_left_ = 0;  // bytes of the current record still to come (0: at a header)
  std::size_t records_ = 0;      // records started
  std::uint8_t header_[4] = {};  // the handshake header (RFC 8446 section 4), maybe split
  std::size_t header_have_ = 0;
  std::size_t body_size_ = 0;
  // The handshake body, copied from the fragments of several records (or reads); empty when
  // the whole body lies in one fragment at once and is parsed in place.
  std::vector<std::uint8_t> assembled_;
};

// The verdict on `data` taken as a whole (a fresh parser).
client_hello parse_client_hello(std::span<const std::uint8_t> data);

}  // namespace airlock::net
