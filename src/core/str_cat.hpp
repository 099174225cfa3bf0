#pragma once
// str_cat("a", 1, sv, 'c'): concatenate strings, characters and numbers into one std::string
// (GCC 12 has no std::format).

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

namespace airlock::core {
namespace detail {

inline void append(std::string& out, std::string_view s) {
  out.append(s);
}
inline void append(std::string& out, const char* s) {
  out.append(s);
}
inline void append(std::string& out, const std::string& s) {
  out.append(s);
}
inline void append(std::string& out, char c) {
  out.push_back(c);
}
template <typename T>
requires(std::is_arithmetic_v<T> && !std::same_as<T, char> &&
         !std::same_as<T, bool>) void append(std::string& out, T value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec == std::errc{}) out.append(buf, end);
}
inline void append(std::string& out, bool b) {
  out.append(b ? "true" : "false");
}

}  // namespace detail

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::string out;
  (detail::append(out, args), ...);
  return out;
}

}  // namespace airlock::core
