#pragma once
// Small text helpers the policy's parser and compilers share: key paths for error messages
// ("rules[3].inject"), ASCII case mapping (core/ascii.hpp), and the HTTP token test (RFC 9110
// section 5.6.2).

#include "core/ascii.hpp"
#include "core/str_cat.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::policy {

using core::lower;
using core::upper;

// "rules" + 3 -> "rules[3]"
inline std::string indexed(std::string_view key, std::size_t i) {
  return core::str_cat(key, '[', i, ']');
}

// RFC 9110 section 5.6.2: tchar, and token = 1*tchar (a field name, a method).
inline bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

inline bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

}  // namespace airlock::policy
