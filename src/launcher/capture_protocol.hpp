#pragma once
// How the relay presents a captured connection (one the command made to an address, not to
// the proxy) to the proxy, so that the policy decides exactly as for a proxied request:
//
//   - TLS (the first byte is a handshake record, RFC 8446 section 5.1): the relay sends
//     `CONNECT name:port`, passes the client's bytes on, and strips the proxy's 2xx answer
//     from what comes back; any other answer resets the client's connection. The proxy then
//     checks the ClientHello's SNI against the name as for any CONNECT.
//   - HTTP/1.x (a request line): each request's origin-form target becomes the absolute form
//     a proxy expects (RFC 9112 section 3.2.2), `GET /x` -> `GET http://name:port/x`; the
//     bodies are framed (Content-Length, chunked) so that every request of a keep-alive
//     connection is rewritten, and answers pass back unchanged. A plain `CONNECT` tunnel to
//     a name would be refused (not_tls), so plain HTTP cannot go that way.
//   - anything else: `CONNECT` too, and the proxy decides (it refuses non-TLS tunnels to names).
//
// Whatever the relay gets wrong here can only make a request fail at the proxy, never pass it
// by: every byte still goes to the proxy, which applies its policy to what it reads. Pure
// functions and a byte-stream transformer; no I/O.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::launcher::capture {

enum class kind { need_more, tls, http, other };

// Empty lines (CRLF) skipped before a request line. RFC 9112 section 2.2 asks a server to
// ignore "at least one"; past this many the stream is not taken for HTTP (kind::other), so a
// client that sends only CRLFs cannot keep the relay buffering and rescanning them.
inline constexpr std::size_t max_empty_lines = 8;

// Classifies the first bytes the client sent: a TLS record, an HTTP request line (upper-case
// method, space, target), or other. need_more until it can tell, which is never past
// max_sniff_bytes (2 * max_empty_lines + a 32-byte method, a space and a target's first byte);
// at end of stream (eof) it always decides. It reads at most that many bytes of `first`.
inline constexpr std::size_t max_sniff_bytes = 2 * max_empty_lines + 34;
kind classify(std::string_view first, bool eof) noexcept;

// "name:port", or "[v6]:port" for an IPv6 literal (RFC 3986 section 3.2.2).
std::string authority(std::string_view host, std::uint16_t port);

// "CONNECT authority HTTP/1.1" with its Host header (RFC 9110 section 9.3.6).
std::string connect_request(std::string_view authority);

// The proxy's answer to that CONNECT, read from the start of what it sent.
struct connect_reply {
  enum class state { need_more, established, refused } result = state::need_more;
  std::size_t head_size = 0;  // established: bytes of the answer's head, to drop
  std::string status_line;    // refused: for the log
};
connect_reply parse_connect_reply(std::string_view data);

// Rewrites the request stream of one HTTP/1.x connection for the proxy.
class http_rewriter {
 public:
  static constexpr std::size_t default_max_head = 64 * 1024;

  explicit http_rewriter(std::string authority, std::size_t max_head = default_max_head);

  // Consumes all of in; appends what goes to the proxy to out.
  void feed(std::string_view in, std::string& out);
  // The client has finished sending: what is buffered (a partial head) goes on unchanged.
  void finish(std::string& out);

  // True once the rest of the stream passes unchanged: after CONNECT, an Upgrade, or a head
  // the rewriter does not understand (which the proxy will answer with an error).
  bool passthrough() const noexcept { return state_ == state::passthrough; }
  std::uint64_t requests() const noexcept { return requests_; }

 private:
  enum class state { head, body, chunk_size, chunk_data, chunk_end, trailers, passthrough };

  void on_head(std::string& out);
  bool on_line(std::string& out);  // chunk_size / trailers: a complete line is in line_
  void end_of_message();
  void give_up(std::string& out);  // emit what is buffered unchanged, then pass through

  std::string authority_;
  std::size_t max_head_;
  state state_ = state::head;
  std::string buf_;  // the head being collected, or the current chunk-size / trailer line
  std::uint64_t remaining_ = 0;
  bool upgrade_ = false;
  std::uint64_t requests_ = 0;
};

}  // namespace airlock::launcher::capture
