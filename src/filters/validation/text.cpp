#include "filters/validation/text.hpp"

#include "core/ascii.hpp"
#include "core/utf8.hpp"

namespace airlock::filters::validation {
namespace {

// The next unit of `s` at `i` after folding, advancing `i`: an ASCII letter in lower case, the
// two non-ASCII letters that fold into ASCII as their ASCII letter, any other byte as itself.
unsigned char next_folded(std::string_view s, std::size_t& i) noexcept {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == 0xC5 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF) {
    i += 2;  // U+017F LATIN SMALL LETTER LONG S
    return 's';
  }
  if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x84 &&
      static_cast<unsigned char>(s[i + 2]) == 0xAA) {
    i += 3;  // U+212A KELVIN SIGN
    return 'k';
  }
  ++i;
  return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c - 'A' + 'a') : c;
}

// PHP turns these into '_' in parameter names (main/php_variables.c).
unsigned char next_lenient(std::string_view s, std::size_t& i) noexcept {
  const unsigned char c = next_folded(s, i);
  return c == ' ' || c == '.' || c == '[' ? '_' : c;
}

bool lenient_equal(std::string_view a, std::string_view b) noexcept {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size())
    if (next_lenient(a, i) != next_lenient(b, j)) return false;
  return i == a.size() && j == b.size();
}

}  // namespace

std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::optional<std::string_view> form_decode(std::string_view raw, std::string& buf) {
  std::string_view out = raw;
  if (raw.find_first_of("%+") != std::string_view::npos) {
    buf.clear();
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (c == '+') {
        buf.push_back(' ');
      } else if (c == '%') {
        // Unlike the WHATWG parser, which passes a bad escape through as is, refuse it:
        // origins disagree about it (some decode "%%41", some fail, some keep it).
        if (raw.size() - i < 3) return std::nullopt;
        const int h = core::hex_value(raw[i + 1]);
        const int l = core::hex_value(raw[i + 2]);
        if (h < 0 || l < 0) return std::nullopt;
        buf.push_back(static_cast<char>(h * 16 + l));
        i += 2;
      } else {
        buf.push_back(c);
      }
    }
    out = buf;
  }
  if (out.find('\0') != std::string_view::npos || !valid_utf8(out)) return std::nullopt;
  return out;
}

bool fold_equal(std::string_view a, std::string_view b) noexcept {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size())
    if (next_folded(a, i) != next_folded(b, j)) return false;
  return i == a.size() && j == b.size();
}

bool lenient_name_equal(std::string_view name, std::string_view listed) noexcept {
  while (!name.empty() && name.front() == ' ')
    name.remove_prefix(1);
  const std::size_t bracket = name.find('[');
  if (bracket != std::string_view::npos && bracket > 0 &&
      lenient_equal(name.substr(0, bracket), listed))
    return true;
  return lenient_equal(name, listed);
}

std::string printable(std::string_view s, std::size_t max) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = c >= 0x20 && c < 0x7F;
    if (out.size() + (plain ? 1 : 4) > max) {
      out.append("...");
      break;
    }
    if (plain) {
      out.push_back(ch);
    } else {
      out.append("\\x");
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

}  // namespace airlock::filters::validation
