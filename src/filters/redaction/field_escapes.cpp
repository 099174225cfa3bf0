#include "filters/redaction/field_escapes.hpp"

#include "core/ascii.hpp"
#include "core/utf8.hpp"

#include <cstring>

namespace airlock::filters::redaction {
namespace {

constexpr int kMaxDigits = 7;  // (decimal 1114111, hex 10FFFF: both fit)

int digit(char c, bool hex) noexcept {
  if (hex) return core::hex_value(c);
  return c >= '0' && c <= '9' ? c - '0' : -1;
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
  // "&#" digits, or "&#x" hex digits, then an optional ';'.
  if (in.size() < 2) return std::string_view::npos;
  if (in[1] != '#') return 0;
  std::size_t at = 2;
  if (at == in.size()) return std::string_view::npos;
  const bool hex = in[at] == 'x' || in[at] == 'X';
  if (hex) ++at;
  char32_t value = 0;
  int digits = 0;
  for (; at < in.size() && digits <= kMaxDigits; ++at, ++digits) {
    const int d = digit(in[at], hex);
    if (d < 0) break;
    value = value * (hex ? 16 : 10) + static_cast<char32_t>(d);
  }
  if (digits > kMaxDigits) return 0;
  if (at == in.size()) return std::string_view::npos;  // more digits, or the ';', may follow
  if (digits == 0) return 0;
  if (in[at] == ';') ++at;
  // (WHATWG: zero, surrogates and values past U+10FFFF read as U+FFFD.)
  if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) value = 0xFFFD;
  core::append_utf8(out, value);
  return at;
}

}  // namespace

bool has_field_escapes(std::string_view text) noexcept {
  // (Two memchr, not find_first_of: libstdc++'s calls memchr on the set for every byte.)
  return std::memchr(text.data(), '%', text.size()) != nullptr ||
         std::memchr(text.data(), '&', text.size()) != nullptr;
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
    const std::size_t plain = in.find_first_of("%&");
    decoded.append(in.substr(0, plain));
    if (plain == std::string_view::npos) return;
    in.remove_prefix(plain);
    const std::size_t n = decode_one(in, decoded);
    if (n == std::string_view::npos) {
      next_tail.assign(in);
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
  if (!tail.starts_with("&#")) return false;
  std::string ended(tail);
  ended.push_back(';');
  return decode_one(ended, out) == ended.size();
}

}  // namespace airlock::filters::redaction
