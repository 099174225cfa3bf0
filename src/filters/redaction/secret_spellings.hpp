#pragma once
// The spellings under which a literal secret can come back in a response: as is, escaped in a
// JSON string (RFC 8259 section 7, also the "\/" and Go-style "\u003c" forms), and
// percent-encoded in a URL or form (RFC 3986 section 2.1, either hex case, and the variants
// common encoders write: '/', the URI delimiters or the path characters kept, '+' for a space,
// encoded twice). An upstream that echoes a request (an error page, a debug endpoint) uses one
// of these. (Not base64: its spellings at three offsets would take the prefilter's anchor
// bytes from the built-in redactors.)

#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction {

// The distinct spellings of `value`, the value itself first.
std::vector<std::string> secret_spellings(std::string_view value);

}  // namespace airlock::filters::redaction
