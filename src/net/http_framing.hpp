#pragma once
// Request (and response) framing checks beyond what Beast's parser enforces (RFC 9112 section 6.3),
// the smuggling defences of the HTTP/1.1 codec: one Content-Length at most, one Host, never both
// framing headers, and "chunked" as the only transfer coding a request may use. Pure: no I/O.

#include <boost/beast/http/message.hpp>

#include <string_view>

namespace airlock::net {

// Why the head's framing is refused; empty when it is acceptable.
std::string_view framing_problem(const boost::beast::http::request_header<>& req);

// Why a response head's framing is refused; empty when it is acceptable. An origin may apply a
// transfer coding other than chunked (RFC 9112 section 6.1), but the proxy undoes only chunked:
// "gzip, chunked" passed on would hand the client bytes no filter has read (the client undoes
// the gzip itself). Beast's parser already refuses two Content-Lengths and both framings.
std::string_view response_framing_problem(const boost::beast::http::response_header<>& res);

// Whether a chunked body's unparsed bytes must not be handed to Beast's parser yet, while more
// can come: Beast 1.81 asserts (BOOST_ASSERT(n >= 5) in parse_chunk_header, an abort in any
// build without NDEBUG) when the last chunk "0\r\n" was seen by one put() and the next put()
// has fewer than 5 bytes, e.g. "0\r\n" then "\r" in separate segments (found by
// fuzz/http_request; fixed upstream after Boost 1.81, Beast pull request 2861). The parser
// keeps the last-chunk line unconsumed, so such a put() starts with '0'; a chunk after data
// starts with its CRLF and is never shorter than 5 bytes there. Waiting costs nothing: a
// complete chunked body ends with at least those 5 bytes. At the end of the stream such bytes
// are an incomplete message.
bool chunk_put_must_wait(bool chunked, std::string_view unparsed) noexcept;

// What the first bytes of a CONNECT tunnel are when they are not TLS: the start of an HTTP/1.x
// request line (RFC 9112 section 3: method SP request-target SP HTTP-version CRLF), which a
// client such as Node's undici EnvHttpProxyAgent sends inside `CONNECT host:80`, or anything
// else.
enum class request_line_status {
  need_more,  // a valid prefix of a request line: read more and call again
  http1,      // a whole request line naming HTTP/1.0 or HTTP/1.1
  other,      // not an HTTP/1.x request line
};
// Bytes past the first line are not looked at; a line longer than `max_line` is `other`.
request_line_status classify_request_line(std::string_view bytes, std::size_t max_line = 8192);

// classify_request_line over bytes that arrive in pieces: each call gets everything received so
// far (the previous call's bytes, then more) and looks only at the new bytes, so a line dribbled
// a few bytes at a time costs linear work, not a re-scan per read. One per connection.
class request_line_scanner {
 public:
  explicit request_line_scanner(std::size_t max_line = 8192) noexcept : max_line_(max_line) {}
  request_line_status scan(std::string_view bytes) noexcept;

 private:
  enum class part { method, target, version, cr, lf };
  std::size_t max_line_;
  request_line_status verdict_ = request_line_status::need_more;
  std::size_t scanned_ = 0;  // bytes looked at so far
  part at_ = part::method;
  std::size_t part_len_ = 0;
};

}  // namespace airlock::net
