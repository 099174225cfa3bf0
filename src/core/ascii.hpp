#pragma once
// ASCII text helpers for protocol tokens (header names and values, media types, codings):
// case-insensitive comparison, case mapping and trimming of optional whitespace. Locale-free
// on purpose: HTTP tokens are ASCII whatever the process's locale says.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::core {

constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr char ascii_upper(char c) noexcept {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

// A hexadecimal digit's value, or -1.
constexpr int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// An ASCII letter or digit (not the locale's: std::isalnum).
constexpr bool is_alnum(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// A byte of base64's or base64url's alphabet (RFC 4648 sections 4 and 5), '=' padding aside;
// base32's and hex's are inside it. Text of these bytes may be encoded data (wrapped in lines,
// split in tokens), which the DLP scanner and the redaction guard read as such.
constexpr bool is_base64_byte(char c) noexcept {
  return is_alnum(c) || c == '+' || c == '/' || c == '-' || c == '_';
}

// Encoded text wrapped in lines may be indented after each break: a PEM or base64 in a YAML
// block scalar, in a config or source file. Readers of wrapped data read up to this many spaces
// or tabs after a break as part of the break, as the decoder that is handed the lines reads
// them; bounded, so that a break and endless blanks after it hold nothing back.
inline constexpr std::size_t kMaxWrapIndent = 64;
constexpr bool is_indent_byte(char c) noexcept {
  return c == ' ' || c == '\t';
}

// ASCII case-insensitive equality.
inline bool iequals(std::string_view a, std::string_view b) noexcept {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = ascii_lower(c);
  return out;
}

inline std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = ascii_upper(c);
  return out;
}

// Without leading and trailing spaces and tabs (RFC 9110 section 5.6.3, OWS).
constexpr std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

}  // namespace airlock::core
