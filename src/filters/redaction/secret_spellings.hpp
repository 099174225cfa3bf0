#pragma once
// The spellings under which a literal secret can come back in a response: as is, escaped in a
// JSON string (RFC 8259 section 7, also the "\/" and Go-style "\u003c" forms), and
// percent-encoded in a URL or form (RFC 3986 section 2.1, either hex case, and the variants
// common encoders write: '/', the URI delimiters or the path characters kept, '+' for a space,
// encoded twice), in base64 or base64url, in hex and in base32. An upstream that echoes a
// request (an error page, a debug endpoint, a base64 data field, a hex dump) uses one of these.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::redaction {

// The distinct spellings of `value`, the value itself first.
std::vector<std::string> secret_spellings(std::string_view value);

// Base64 (RFC 4648 section 4) and base64url (section 5) of `value` wherever it sits in a longer
// encoded text: at each of the three offsets from a quantum's start, the characters only the
// value's own bits decide (the first and last may mix in a neighbour's), and the value encoded
// alone, padded. None for a value shorter than kMinBase64Value, whose 16 or fewer characters
// could turn up in other encoded data by chance.
inline constexpr std::size_t kMinBase64Value = 12;
std::vector<std::string> secret_base64_spellings(std::string_view value);

// Hex (either case, as xxd -p, od and most debug dumps write bytes; also with one space, ':' or
// '-' between the bytes, as one line of Python's bytes.hex(sep) or Go's "% x") and base32 (RFC 4648
// section 6, either case: TOTP seeds, some tokens) of `value`, in a longer encoded text too (at
// each of base32's five offsets, the characters only the value's bits decide); none for a value
// shorter than kMinBase64Value, for the same reason.
std::vector<std::string> secret_hex_base32_spellings(std::string_view value);

// UTF-16 and UTF-32 of an ASCII value, in either byte order: its bytes with one NUL byte
// between them (UTF-16) or three (UTF-32), which both orders contain (a Windows binary's
// strings, a body a client reads with its NUL bytes dropped). None when a byte is over 0x7f
// (its wide form is not byte-wise).
std::vector<std::string> secret_wide_spellings(std::string_view value);

}  // namespace airlock::filters::redaction
