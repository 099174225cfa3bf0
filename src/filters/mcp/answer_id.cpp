#include "filters/mcp/answer_id.hpp"

#include <boost/json/parse.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace airlock::filters::mcp {
namespace {

namespace json = boost::json;

// ECMA-262 section 12.2 (WhiteSpace: TAB, VT, FF, ZWNBSP, Zs) and 12.3 (LineTerminator), as
// UTF-8.
constexpr std::array<std::string_view, 25> kWhite{
    "\t",           "\n",           "\v",           "\f",           "\r",           " ",
    "\xC2\xA0",     "\xEF\xBB\xBF", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
    "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
    "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
    "\xE3\x80\x80"};

std::string_view trim_white(std::string_view s) {
  for (bool more = true; more && !s.empty();) {
    more = false;
    for (std::string_view w : kWhite) {
      if (s.starts_with(w)) {
        s.remove_prefix(w.size());
        more = true;
      }
      if (s.ends_with(w)) {
        s.remove_suffix(w.size());
        more = true;
      }
    }
  }
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// StrUnsignedDecimalLiteral without Infinity: digits [. [digits]] [exp] | . digits [exp].
bool decimal_literal(std::string_view s) {
  const std::size_t e = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, e);
  if (e != std::string_view::npos) {
    std::string_view exp = s.substr(e + 1);
    if (!exp.empty() && (exp.front() == '+' || exp.front() == '-')) exp.remove_prefix(1);
    if (!all_digits(exp)) return false;
  }
  const std::size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return all_digits(mantissa);
  const std::string_view whole = mantissa.substr(0, dot);
  const std::string_view fraction = mantissa.substr(dot + 1);
  return (whole.empty() || all_digits(whole)) && (fraction.empty() || all_digits(fraction)) &&
         !(whole.empty() && fraction.empty());
}

std::optional<double> string_number(std::string_view s) {
  s = trim_white(s);
  if (s.empty()) return 0.0;
  if (s.size() > 2 && s[0] == '0') {
    const char b = s[1];
    const int base = b == 'x' || b == 'X'   ? 16
                     : b == 'o' || b == 'O' ? 8
                     : b == 'b' || b == 'B' ? 2
                                            : 0;
    if (base != 0) {
      std::uint64_t v = 0;
      const std::string_view digits = s.substr(2);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
      // (Longer ones are beyond any id an SDK sends.)
      if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
      return static_cast<double>(v);
    }
  }
  double sign = 1;
  if (s.front() == '+' || s.front() == '-') {
    sign = s.front() == '-' ? -1 : 1;
    s.remove_prefix(1);
  }
  if (!decimal_literal(s)) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return sign * v;
}

}  // namespace

std::optional<double> id_number(const json::value& id) {
  if (id.is_int64()) return static_cast<double>(id.get_int64());
  if (id.is_uint64()) return static_cast<double>(id.get_uint64());
  if (id.is_double())
    return std::isfinite(id.get_double()) ? std::optional(id.get_double()) : std::nullopt;
  if (id.is_string()) return string_number(id.get_string());
  return std::nullopt;
}

bool answers_id(const json::value& answer_id, std::string_view request_id) {
  json::error_code ec;
  const json::value request = json::parse(request_id, ec);
  if (ec) return false;
  if (answer_id == request) return true;
  const auto a = id_number(answer_id);
  const auto b = id_number(request);
  return a && b && *a == *b;
}

}  // namespace airlock::filters::mcp
