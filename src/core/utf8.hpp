#pragma once
// Strict UTF-8 validation, shared by the policy compiler and the request checks, and the
// encoding of one code point, shared by the DLP decoders.

#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::core {

// RFC 3629 well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) noexcept;

// The length of the well-formed UTF-8 sequence at s[i] (i < s.size()), or 0 when none starts
// there.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept;

// `s` safe to print on one line of a log, a terminal or JSON: control characters (C0, DEL, C1)
// as \n, \r, \t or \xNN, and each byte of malformed UTF-8 as \xNN; the rest as it is. For text
// from a file or a peer quoted in a message (a newline there would forge a log line).
std::string printable_text(std::string_view s);

// Appends `cp` in UTF-8 (RFC 3629 section 3); a surrogate or a value above U+10FFFF becomes
// U+FFFD.
void append_utf8(std::string& out, char32_t cp);

}  // namespace airlock::core
