#pragma once
// Strict UTF-8 validation, shared by the policy compiler and the request checks, and the
// encoding of one code point, shared by the DLP decoders.

#include <string>
#include <string_view>

namespace airlock::core {

// RFC 3629 well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) noexcept;

// Appends `cp` in UTF-8 (RFC 3629 section 3); a surrogate or a value above U+10FFFF becomes
// U+FFFD.
void append_utf8(std::string& out, char32_t cp);

}  // namespace airlock::core
