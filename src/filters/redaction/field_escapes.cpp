#include "filters/redaction/field_escapes.hpp"

#include "core/ascii.hpp"
#include "core/utf8.hpp"
#include "filters/redaction/html_reference.hpp"

#include <cstring>

namespace airlock::filters::redaction {
namespace {

constexpr std::size_t kMaxSignificant = 8;  // (8 digits are past U+10FFFF in either base)

// A numeric reference at the front of `in` ("&#", "&#x"): as decode_one.
std::size_t decode_numeric(std::string_view in, std::string& out) {
  std::size_t at = 2;
  if (at == in.size()) return std::string_view::npos;
  const bool hex = in[at] == 'x' || in[at] == 'X';
  if (hex) ++at;
  char32_t value = 0;
  std::size_t digits = 0;
  for (; at < in.size(); ++at, ++digits) {
    const int d = reference_digit(in[at], hex);
    if (d < 0) break;
    value = numeric_reference_digit(value, d, hex);
  }
  if (at == in.size()) return std::string_view::npos;  // more digits, or the ';', may follow
  if (digits == 0) return 0;
  if (in[at] == ';') ++at;
  core::append_utf8(out, numeric_reference_value(value));
  return at;
}

// A named reference at the front of `in` ("&" and a letter or digit): as decode_one.
std::size_t decode_named(std::string_view in, std::string& out) {
  std::size_t at = 1;
  while (at < in.size() && core::is_alnum(in[at]) && at <= kMaxReferenceName)
    ++at;
  const std::string_view name = in.substr(1, at - 1);
  if (name.size() > kMaxReferenceName) return 0;
  if (at == in.size()) return std::string_view::npos;
  const auto r = read_named_reference(name, in[at] == ';');
  if (r.used == 0) return 0;
  out.append(r.text);
  return 1 + r.used + (r.semicolon ? 1 : 0);
}

// A JSON (or JavaScript \xHH) escape at the front of `in` (a string that holds JSON, a tool
// call's arguments, decoded once more): as decode_one.
std::size_t decode_backslash(std::string_view in, std::string& out) {
  if (in.size() < 2) return std::string_view::npos;
  if (const int e = one_letter_escape(static_cast<unsigned char>(in[1])); e >= 0) {
    out.push_back(static_cast<char>(e));
    return 2;
  }
  const std::size_t digits = in[1] == 'u' ? 4 : in[1] == 'x' ? 2 : 0;
  if (digits == 0) return 0;
  char32_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    if (2 + i == in.size()) return std::string_view::npos;
    const int d = core::hex_value(in[2 + i]);
    if (d < 0) return 0;
    value = value * 16 + static_cast<char32_t>(d);
  }
  // (A surrogate half alone reads as U+FFFD: secrets are ASCII.)
  core::append_utf8(out, numeric_reference_value(value));
  return 2 + digits;
}

// One escape at the front of `in`: its length, with its decoding appended to `out`; 0 when it
// is not one (the '%' or '&' is a character as written); npos when `in` ends before it could
// be known.
std::size_t decode_one(std::string_view in, std::string& out) {
  if (in[0] == '%') {
    if (in.size() < 3) {
      if (in.size() == 2 && core::hex_value(in[1]) < 0) return 0;
      return std::string_view::npos;
    }
    const int hi = core::hex_value(in[1]), lo = core::hex_value(in[2]);
    if (hi < 0 || lo < 0) return 0;
    out.push_back(static_cast<char>(hi * 16 + lo));
    return 3;
  }
  if (in[0] == '\\') return decode_backslash(in, out);
  if (in.size() < 2) return std::string_view::npos;
  if (in[1] == '#') return decode_numeric(in, out);
  if (core::is_alnum(in[1])) return decode_named(in, out);
  return 0;
}

// An incomplete escape as kept: a numeric reference's leading zeros as one and its digits past
// the eighth dropped (neither changes what it reads as), so the tail stays short.
void keep_tail(std::string_view in, std::string& tail) {
  if (!in.starts_with("&#")) {
    tail.assign(in);
    return;
  }
  std::size_t at = 2;
  const bool hex = at < in.size() && (in[at] == 'x' || in[at] == 'X');
  if (hex) ++at;
  tail.assign(in.substr(0, at));
  const std::size_t first = in.find_first_not_of('0', at);
  if (at < in.size() && in[at] == '0') tail.push_back('0');
  if (first != std::string_view::npos) tail.append(in.substr(first, kMaxSignificant));
}

}  // namespace

bool has_field_escapes(std::string_view text) noexcept {
  // (Two memchr, not find_first_of: libstdc++'s calls memchr on the set for every byte.)
  return std::memchr(text.data(), '%', text.size()) != nullptr ||
         std::memchr(text.data(), '&', text.size()) != nullptr ||
         std::memchr(text.data(), '\\', text.size()) != nullptr;
}

void decode_field_escapes(std::string_view tail, std::string_view text, std::string& decoded,
                          std::string& next_tail) {
  decoded.clear();
  next_tail.clear();
  std::string joined;
  std::string_view in = text;
  if (!tail.empty()) {
    joined.reserve(tail.size() + text.size());
    joined.append(tail).append(text);
    in = joined;
  }
  decoded.reserve(in.size());
  while (!in.empty()) {
    std::size_t plain = 0;  // (a loop: libstdc++'s find_first_of calls memchr for each byte)
    while (plain < in.size() && in[plain] != '%' && in[plain] != '&' && in[plain] != '\\')
      ++plain;
    decoded.append(in.substr(0, plain));
    if (plain == in.size()) return;
    in.remove_prefix(plain);
    const std::size_t n = decode_one(in, decoded);
    if (n == std::string_view::npos) {
      keep_tail(in, next_tail);
      return;
    }
    if (n == 0) {
      decoded.push_back(in[0]);
      in.remove_prefix(1);
    } else {
      in.remove_prefix(n);
    }
  }
}

bool decode_tail_as_ended(std::string_view tail, std::string& out) {
  out.clear();
  if (tail.empty()) return false;
  std::string ended(tail);
  // A numeric reference ends with its digits; a name only if it is one of the legacy names.
  if (tail.starts_with("&#") || named_reference_without_semicolon(tail.substr(1)))
    ended.push_back('\x01');
  else
    return false;
  const std::size_t n = decode_one(ended, out);
  return n != 0 && n != std::string_view::npos;
}

}  // namespace airlock::filters::redaction
