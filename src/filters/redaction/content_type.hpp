#pragma once
// Which response bodies are redacted: text-like media types are, everything else (images,
// archives, octet streams, multipart) passes byte for byte.

#include "filters/redaction/stream.hpp"

#include <string_view>

namespace airlock::filters::redaction {

enum class body_kind {
  text,         // redact as one text
  binary,       // pass untouched
  unsupported,  // text in a charset the patterns cannot see (UTF-16/32): fail closed
};

struct body_class {
  body_kind kind = body_kind::binary;
  framing frame = framing::none;  // for text: events for text/event-stream, lines for NDJSON
};

// Classifies a Content-Type header value (RFC 9110 section 8.3.1; case-insensitive type and
// subtype, parameters ignored except charset). Text-like: text/*, application/json and
// */*+json, NDJSON/JSON Lines/json-seq, application/xml and */*+xml, JavaScript/ECMAScript,
// application/x-www-form-urlencoded, YAML, GraphQL. An empty or missing value is treated as
// text: a response that does not say what it is gets redacted rather than trusted.
body_class classify_content_type(std::string_view content_type) noexcept;

}  // namespace airlock::filters::redaction
