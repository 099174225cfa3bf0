#pragma once
// Content-Encoding as far as redaction is concerned: what the proxy can decode and re-encode,
// and what it must refuse to pass under a redacting rule (it cannot see inside).

#include <boost/beast/http/fields.hpp>

#include <string_view>

namespace airlock::filters::redaction {

enum class content_coding {
  identity,
  gzip,         // RFC 9110 section 8.4.1.3 (and x-gzip)
  deflate,      // RFC 9110 section 8.4.1.2: zlib-wrapped; raw deflate is also accepted
  unsupported,  // br, zstd, compress, unknown, or several codings stacked: fail closed
};

// Parses a Content-Encoding field value: a comma-separated list of codings in the order they
// were applied (RFC 9110 section 8.4). "identity" and empty members are ignored; one gzip or
// deflate is supported; anything else makes the whole value unsupported.
content_coding parse_content_encoding(std::string_view value) noexcept;
// The same for a whole head: a list field may come as several field lines, which mean their
// values joined by commas (RFC 9110 section 5.3); reading only the first would miss a coding.
content_coding parse_content_encoding(const boost::beast::http::fields& head);

// Whether a head says its gRPC messages are compressed: a grpc-encoding (or Connect's
// connect-content-encoding) line other than "identity", any of them (implementations differ in
// which line they take).
bool grpc_compressed(const boost::beast::http::fields& head);
// The coding of the messages whose compressed flag is set: identity when the head names none,
// gzip or deflate (zlib, as gRPC's "deflate" is), unsupported for any other (snappy, zstd) or
// for two different ones.
content_coding grpc_message_coding(const boost::beast::http::fields& head);

std::string_view to_string(content_coding c) noexcept;

}  // namespace airlock::filters::redaction
