#pragma once
// Which response bodies are redacted: text-like media types are, everything else (images,
// archives, octet streams, multipart) passes byte for byte.

#include "filters/redaction/stream.hpp"

#include <boost/beast/http/fields.hpp>

#include <cstddef>
#include <optional>

#include <string_view>

namespace airlock::filters::redaction {

enum class body_kind {
  text,         // redact as one text
  binary,       // pass untouched
  unsupported,  // text in a charset the patterns cannot see (UTF-16/32, EBCDIC, UTF-7, two
                // charset parameters): fail closed
};

struct body_class {
  body_kind kind = body_kind::binary;
  framing frame = framing::none;  // for text: events for text/event-stream, lines for NDJSON
  // gRPC's length-prefixed messages (application/grpc, grpc+proto, grpc+json, gRPC-Web, and
  // Connect's streams, application/connect+proto or +json): binary whatever the codec, since a
  // redaction would change a message's length under its prefix.
  bool grpc = false;
};

// Classifies a Content-Type header value (RFC 9110 section 8.3.1; case-insensitive type and
// subtype, parameters ignored except charset, which must name an ASCII-compatible charset).
// gRPC's types are binary, with `grpc` set. Text-like: text/*, application/json and
// */*+json, NDJSON/JSON Lines/json-seq, application/xml and */*+xml, JavaScript/ECMAScript,
// application/x-www-form-urlencoded, YAML, GraphQL. An empty or missing value is treated as
// text: a response that does not say what it is gets redacted rather than trusted.
body_class classify_content_type(std::string_view content_type) noexcept;

// Whether text is UTF-16 or UTF-32 whatever its label says, as a client finds out: a byte-order
// mark (the WHATWG Encoding Standard's BOM sniffing), or a NUL byte among its first bytes (RFC
// 4627 section 3, as Python's requests reads JSON), which text in an ASCII-compatible charset
// never has. `start` is the text's first kSniffBytes (or all of it).
inline constexpr std::size_t kSniffBytes = 1024;
bool sniffs_as_utf16_or_32(std::string_view start) noexcept;

// Whether a Content-Type names UTF-16 or UTF-32 (any byte order) as its charset.
bool utf16_or_32_charset(std::string_view content_type) noexcept;

// The head's Content-Type value (empty when absent), or nullopt when it has several field lines:
// the field is a singleton (RFC 9110 section 8.3) and clients differ in which line they take.
std::optional<std::string_view> sole_content_type(const boost::beast::http::fields& head);

}  // namespace airlock::filters::redaction
