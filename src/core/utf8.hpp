#pragma once
// Strict UTF-8 validation, shared by the policy compiler and the request checks.

#include <string_view>

namespace airlock::core {

// RFC 3629 well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view s) noexcept;

}  // namespace airlock::core
