#include "filters/dlp/escapes.hpp"

#include "filters/redaction/html_reference.hpp"

#include "core/utf8.hpp"
#include "filters/dlp/decode.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

namespace airlock::filters::dlp {
namespace {

// A character that, once unescaped, can be part of a secret or of a word: ASCII letters,
// digits and the punctuation of secrets and URLs (not the '<', '>', '&', '"', '\'' encoders
// escape for HTML's sake), and what fold_confusables() turns into ASCII or removes, but for
// spaces (&#160; is everywhere, and the injection patterns read escaped spaces as spaces).
bool code_point_may_hide(std::uint32_t u) {
  if (u < 0x80)
    return u > 0x20 && u < 0x7F && u != '<' && u != '>' && u != '&' && u != '"' && u != '\'';
  return folds_away(u) && !unicode_space(u);
}

// The four hex digits of a JSON \u escape at `i`, or -1.
int hex4(std::string_view s, std::size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t k = i; k < i + 4; ++k) {
    const int d = hex_value(s[k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// A numeric character reference at `at` ("&#105;", "&#x69;", the ';' optional): its code point
// and length, or false.
bool numeric_reference(std::string_view s, std::size_t at, std::uint32_t& cp, std::size_t& len) {
  std::size_t i = at + 2;
  if (at + 2 >= s.size() || s[at] != '&' || s[at + 1] != '#') return false;
  const bool hex = s[i] == 'x' || s[i] == 'X';
  i += hex ? 1 : 0;
  const std::size_t digits_from = i;
  char32_t v = 0;
  // Every digit, leading zeros included, as a browser reads them (html_reference.hpp).
  for (; i < s.size(); ++i) {
    const int d = redaction::reference_digit(s[i], hex);
    if (d < 0) break;
    v = redaction::numeric_reference_digit(v, d, hex);
  }
  if (i == digits_from) return false;
  if (i < s.size() && s[i] == ';') ++i;
  cp = static_cast<std::uint32_t>(redaction::numeric_reference_value(v));
  len = i - at;
  return true;
}

// `s` with each escape `decode` recognises at a backslash rewritten: decode(s, i, out) appends
// the meaning of the escape at s[i] and returns how many bytes it spans, or 0 to keep the
// backslash as it is. Nullopt when nothing was rewritten (the common case costs one find).
template <class Decode>
std::optional<std::string> unescape_each(std::string_view s, Decode decode) {
  const auto at = s.find('\\');
  if (at == std::string_view::npos) return std::nullopt;
  std::string out(s.substr(0, at));
  out.reserve(s.size());
  bool changed = false;
  for (std::size_t i = at; i < s.size();) {
    const std::size_t used = s[i] == '\\' ? decode(s, i, out) : 0;
    if (used == 0) {
      out.push_back(s[i++]);
      continue;
    }
    i += used;
    changed = true;
  }
  if (!changed) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> json_unescape(std::string_view s) {
  return unescape_each(s, [](std::string_view s, std::size_t i, std::string& out) -> std::size_t {
    if (i + 1 == s.size()) return 0;
    const char e = s[i + 1];
    static constexpr char kEscapes[] = "\"\\/bfnrt";
    static constexpr char kMeaning[] = "\"\\/\b\f\n\r\t";
    const char* simple = e == 0 ? nullptr : std::strchr(kEscapes, e);
    if (simple != nullptr) {
      out.push_back(kMeaning[simple - kEscapes]);
      return 2;
    }
    const int u = e == 'u' ? hex4(s, i + 2) : -1;
    if (u < 0) return 0;  // not an escape JSON knows: kept
    std::uint32_t cp = static_cast<std::uint32_t>(u);
    std::size_t used = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u') {
      const int low = hex4(s, i + 8);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(low) - 0xDC00);
        used = 12;
      }
    }
    core::append_utf8(out, cp);
    return used;
  });
}

bool json_escapes_may_hide(std::string_view s) {
  for (auto at = s.find('\\'); at != std::string_view::npos && at + 1 < s.size();
       at = s.find('\\', at + 2)) {
    const char e = s[at + 1];
    if (e == '/' &&
        ((at > 0 && base64_byte(s[at - 1])) || (at + 2 < s.size() && base64_byte(s[at + 2]))))
      return true;
    const int u = e == 'u' ? hex4(s, at + 2) : -1;
    if (u >= 0 && code_point_may_hide(static_cast<std::uint32_t>(u))) return true;
  }
  return false;
}

namespace {

// The byte of a \xHH escape at `at` (two hex digits), or -1.
int hex_byte_at(std::string_view s, std::size_t at) {
  if (at + 4 > s.size() || s[at] != '\\' || (s[at + 1] != 'x' && s[at + 1] != 'X')) return -1;
  const int hi = hex_value(s[at + 2]), lo = hex_value(s[at + 3]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

std::optional<std::string> hex_byte_unescape(std::string_view s) {
  return unescape_each(s, [](std::string_view s, std::size_t i, std::string& out) -> std::size_t {
    const int b = hex_byte_at(s, i);
    if (b < 0) return 0;
    out.push_back(static_cast<char>(b));
    return 4;
  });
}

bool hex_byte_escapes_may_hide(std::string_view s) {
  for (auto at = s.find('\\'); at != std::string_view::npos; at = s.find('\\', at + 1)) {
    const int b = hex_byte_at(s, at);
    if (b >= 0 && code_point_may_hide(static_cast<std::uint32_t>(b))) return true;
  }
  return false;
}

std::optional<std::string> html_unescape(std::string_view s) {
  auto at = s.find('&');
  if (at == std::string_view::npos) return std::nullopt;
  static constexpr std::array<std::pair<std::string_view, char>, 6> kNamed{{
      {"&nbsp;", ' '},
      {"&amp;", '&'},
      {"&lt;", '<'},
      {"&gt;", '>'},
      {"&quot;", '"'},
      {"&apos;", '\''},
  }};
  std::string out(s.substr(0, at));
  out.reserve(s.size());
  bool changed = false;
  for (std::size_t i = at; i < s.size();) {
    if (s[i] != '&') {
      out.push_back(s[i++]);
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (numeric_reference(s, i, cp, len)) {
      core::append_utf8(out, cp);
      i += len;
      changed = true;
      continue;
    }
    bool named = false;
    for (const auto& [name, c] : kNamed) {
      if (s.substr(i, name.size()) == name) {
        out.push_back(c);
        i += name.size();
        named = changed = true;
        break;
      }
    }
    if (!named) out.push_back(s[i++]);
  }
  if (!changed) return std::nullopt;
  return out;
}

bool html_references_may_hide(std::string_view s) {
  for (auto at = s.find("&#"); at != std::string_view::npos; at = s.find("&#", at + 2)) {
    std::uint32_t cp = 0;
    std::size_t len = 0;
    if (numeric_reference(s, at, cp, len) && code_point_may_hide(cp)) return true;
  }
  return false;
}

}  // namespace airlock::filters::dlp
