#include "filters/dlp/decode.hpp"

#include "core/utf8.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

namespace airlock::filters::dlp {
namespace {

constexpr int base64_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

int base32_value(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= '2' && c <= '7') return c - '2' + 26;
  return -1;
}

// Cyrillic and Greek capitals and small letters that render like a Latin letter (UTS #39
// confusables.txt, the single-letter entries among the common scripts).
constexpr std::array<std::pair<std::uint32_t, char>, 40> kLookalikes{{
    {0x0410, 'A'}, {0x0412, 'B'}, {0x0415, 'E'}, {0x041A, 'K'}, {0x041C, 'M'}, {0x041D, 'H'},
    {0x041E, 'O'}, {0x0420, 'P'}, {0x0421, 'C'}, {0x0422, 'T'}, {0x0425, 'X'}, {0x0430, 'a'},
    {0x0435, 'e'}, {0x043E, 'o'}, {0x0440, 'p'}, {0x0441, 'c'}, {0x0443, 'y'}, {0x0445, 'x'},
    {0x0455, 's'}, {0x0456, 'i'}, {0x0458, 'j'}, {0x0405, 'S'}, {0x0406, 'I'}, {0x0408, 'J'},
    {0x0391, 'A'}, {0x0392, 'B'}, {0x0395, 'E'}, {0x0396, 'Z'}, {0x0397, 'H'}, {0x0399, 'I'},
    {0x039A, 'K'}, {0x039C, 'M'}, {0x039D, 'N'}, {0x039F, 'O'}, {0x03A1, 'P'}, {0x03A4, 'T'},
    {0x03A5, 'Y'}, {0x03A7, 'X'}, {0x03BF, 'o'}, {0x03BD, 'v'},
}};

// The length of the UTF-8 sequence `s` starts with (RFC 3629 section 4: a lead byte C2..F4, then
// continuation bytes 80..BF), or 1 when it does not start one. A lead byte whose continuation
// bytes are missing must not take the bytes after it: "\xE2" before " AKIA..." would hide the
// space and the 'A'.
std::size_t utf8_length(std::string_view s) noexcept {
  const auto c = static_cast<unsigned char>(s[0]);
  const std::size_t len = c < 0xC2 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 1;
  if (len > s.size()) return 1;
  for (std::size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) return 1;
  return len;
}

// The letters of the Letterlike Symbols block that stand in for the mathematical alphabets'
// holes (the script, fraktur and double-struck capitals and a few small letters Unicode had
// encoded before U+1D400; UnicodeData.txt maps each to its letter <font>), and the Kelvin and
// Angstrom signs.
constexpr std::array<std::pair<std::uint32_t, char>, 26> kLetterlike{{
    {0x2102, 'C'}, {0x210A, 'g'}, {0x210B, 'H'}, {0x210C, 'H'}, {0x210D, 'H'}, {0x210E, 'h'},
    {0x2110, 'I'}, {0x2111, 'I'}, {0x2112, 'L'}, {0x2115, 'N'}, {0x2119, 'P'}, {0x211A, 'Q'},
    {0x211B, 'R'}, {0x211C, 'R'}, {0x211D, 'R'}, {0x2124, 'Z'}, {0x2128, 'Z'}, {0x212A, 'K'},
    {0x212B, 'A'}, {0x212C, 'B'}, {0x212D, 'C'}, {0x212F, 'e'}, {0x2130, 'E'}, {0x2131, 'F'},
    {0x2133, 'M'}, {0x2134, 'o'},
}};

// The ASCII character `cp` is drawn as, or 0: full-width forms (U+FF01..U+FF5E), the
// mathematical letters and digits (U+1D400..U+1D6A3: 13 styles of A-Z a-z, bold to monospace,
// with the Letterlike letters for their holes; U+1D7CE..U+1D7FF: 5 styles of 0-9), circled
// and parenthesized letters (U+249C..U+24E9), squared and negative circled or squared capitals
// and regional indicators (U+1F130..U+1F1FF), and the Cyrillic and Greek look-alikes. NFKC
// (UAX #15) maps most of them the same way, and a model reads them all as the letters.
char ascii_twin(std::uint32_t cp) noexcept {
  auto letter = [](std::uint32_t from, std::uint32_t cp, char first) {
    return static_cast<char>(first + (cp - from));
  };
  if (cp < 0x2102) {  // below the other ranges: the Cyrillic and Greek look-alikes only
    for (const auto& [from, to] : kLookalikes)
      if (from == cp) return to;
    return 0;
  }
  if (cp >= 0xFF01 && cp <= 0xFF5E) return static_cast<char>(cp - 0xFF01 + 0x21);
  if (cp >= 0x1D400 && cp <= 0x1D6A3) {
    const auto i = (cp - 0x1D400) % 52;
    return static_cast<char>(i < 26 ? 'A' + i : 'a' + (i - 26));
  }
  if (cp >= 0x1D7CE && cp <= 0x1D7FF) return static_cast<char>('0' + (cp - 0x1D7CE) % 10);
  if (cp >= 0x249C && cp <= 0x24B5) return letter(0x249C, cp, 'a');  // (a)
  if (cp >= 0x24B6 && cp <= 0x24CF) return letter(0x24B6, cp, 'A');  // circled
  if (cp >= 0x24D0 && cp <= 0x24E9) return letter(0x24D0, cp, 'a');
  if (cp >= 0x1F130 && cp <= 0x1F149) return letter(0x1F130, cp, 'A');  // squared
  if (cp >= 0x1F150 && cp <= 0x1F169) return letter(0x1F150, cp, 'A');  // negative circled
  if (cp >= 0x1F170 && cp <= 0x1F189) return letter(0x1F170, cp, 'A');  // negative squared
  if (cp >= 0x1F1E6 && cp <= 0x1F1FF) return letter(0x1F1E6, cp, 'A');  // regional indicators
  for (const auto& [from, to] : kLetterlike)
    if (from == cp) return to;
  return 0;
}

// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): what a renderer shows as
// nothing, so what can sit inside a secret unseen (joiners, bidi controls, variation selectors,
// tags, fillers).
bool invisible(std::uint32_t cp) noexcept {
  return cp == 0x00AD || cp == 0x034F || cp == 0x061C || cp == 0x115F || cp == 0x1160 ||
         cp == 0x17B4 || cp == 0x17B5 || (cp >= 0x180B && cp <= 0x180F) ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0x3164 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         cp == 0xFEFF || cp == 0xFFA0 || (cp >= 0xFFF0 && cp <= 0xFFF8) ||
         (cp >= 0x1BCA0 && cp <= 0x1BCA3) || (cp >= 0x1D173 && cp <= 0x1D17A) ||
         (cp >= 0xE0000 && cp <= 0xE0FFF);
}

}  // namespace

// The spaces that are not ASCII's (Unicode category Zs): a reader, and a model, sees a space.
bool unicode_space(std::uint32_t cp) noexcept {
  return cp == 0x00A0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

std::string percent_decode(std::string_view s, bool plus_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_space && c == '+' ? ' ' : c);
  }
  return out;
}

std::optional<std::string> quoted_printable_decode(std::string_view s) {
  // The length of the escape at s[at] ('='): a soft line break or "=HH", else 0.
  auto escape = [&](std::size_t at) -> std::size_t {
    const std::string_view rest = s.substr(at + 1);
    if (rest.starts_with('\n')) return 2;
    if (rest.starts_with("\r\n")) return 3;
    return rest.size() >= 2 && hex_value(rest[0]) >= 0 && hex_value(rest[1]) >= 0 ? 3 : 0;
  };
  // Most text has no escape: found without copying it (bulk appends between '=' after that).
  std::size_t at = s.find('=');
  while (at != std::string_view::npos && escape(at) == 0)
    at = s.find('=', at + 1);
  if (at == std::string_view::npos) return std::nullopt;
  std::string out(s.substr(0, at));
  while (at != std::string_view::npos) {
    const std::size_t n = escape(at);
    if (n == 3 && s[at + 1] != '\r')
      out.push_back(static_cast<char>(hex_value(s[at + 1]) * 16 + hex_value(s[at + 2])));
    if (n == 0) out.push_back('=');
    const std::size_t from = at + std::max<std::size_t>(n, 1);
    at = s.find('=', from);
    out.append(s.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
  }
  return out;
}

std::optional<std::string> without_nuls(std::string_view s) {
  const auto nuls = static_cast<std::size_t>(std::count(s.begin(), s.end(), '\0'));
  if (nuls == 0 || nuls * 8 < s.size()) return std::nullopt;
  std::string out;
  out.reserve(s.size() - nuls);
  for (char c : s)
    if (c != '\0') out.push_back(c);
  return out;
}

bool base64_byte(char c) noexcept {
  static constexpr auto table = [] {
    std::array<bool, 256> t{};
    for (int b = 0; b < 256; ++b)
      t[static_cast<std::size_t>(b)] = b == '=' || base64_value(static_cast<char>(b)) >= 0;
    return t;
  }();
  return table[static_cast<unsigned char>(c)];
}

std::optional<std::string> base64_decode(std::string_view s) {
  while (!s.empty() && s.back() == '=')
    s.remove_suffix(1);
  if (s.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(s.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = base64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::optional<std::string> base32_decode(std::string_view s) {
  while (!s.empty() && s.back() == '=')
    s.remove_suffix(1);
  std::string out;
  out.reserve(s.size() * 5 / 8);
  std::uint64_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = base32_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 5) | static_cast<std::uint64_t>(v);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::optional<std::string> hex_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size() / 2);
  std::size_t i = 0;
  char sep = 0;
  while (i < s.size()) {
    if (i + 1 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
    if (i < s.size() && (s[i] == '-' || s[i] == ':' || s[i] == ' ')) {
      // One separator, the same one, between every pair.
      if (sep != 0 && s[i] != sep) return std::nullopt;
      if (sep == 0 && out.size() != 1) return std::nullopt;
      sep = s[i];
      ++i;
      if (i == s.size()) return std::nullopt;
    } else if (sep != 0 && i < s.size()) {
      return std::nullopt;
    }
  }
  return out;
}

namespace {

// One line of a hex dump: its bytes appended to `out`; false when it is not such a line.
bool hexdump_line(std::string_view line, std::string& out) {
  std::size_t i = 0;
  while (i < line.size() && hex_value(line[i]) >= 0)
    ++i;
  if (i < 6 || i == line.size() || (line[i] != ':' && line[i] != ' ')) return false;
  i += line[i] == ':' ? 1 : 0;
  const std::size_t start = out.size();
  while (out.size() - start < 16) {
    std::size_t gap = 0;
    while (i + gap < line.size() && line[i + gap] == ' ')
      ++gap;
    if (gap == 0 || gap > 2) break;
    i += gap;
    std::size_t digits = 0;
    while (i + digits < line.size() && hex_value(line[i + digits]) >= 0)
      ++digits;
    if (digits == 0 || digits % 2 != 0 || out.size() - start + digits / 2 > 16) break;
    for (std::size_t k = 0; k < digits; k += 2)
      out.push_back(static_cast<char>(hex_value(line[i + k]) * 16 + hex_value(line[i + k + 1])));
    i += digits;
  }
  return out.size() > start;
}

}  // namespace

std::optional<std::string> hexdump_decode(std::string_view s) {
  std::string out;
  std::optional<std::string> found;
  std::size_t lines = 0;
  // A dump ended: kept when it was one (two lines or more), else forgotten.
  auto end_dump = [&] {
    if (lines >= 2) found = found ? *found + out : out;
    out.clear();
    lines = 0;
  };
  for (std::size_t pos = 0; pos < s.size();) {
    auto eol = s.find('\n', pos);
    if (eol == std::string_view::npos) eol = s.size();
    std::string_view line = s.substr(pos, eol - pos);
    if (line.ends_with('\r')) line.remove_suffix(1);
    pos = eol + 1;
    if (hexdump_line(line, out)) {
      ++lines;
      continue;
    }
    end_dump();
  }
  end_dump();
  if (found && found->empty()) return std::nullopt;
  return found;
}

bool folds_away(std::uint32_t cp) noexcept {
  return invisible(cp) || unicode_space(cp) || ascii_twin(cp) != 0;
}

std::optional<std::string> fold_confusables(std::string_view s) {
  // Nothing to fold in ASCII, which is nearly every text: eight bytes at a time, any high bit.
  std::size_t first = 0;
  for (; first + 8 <= s.size(); first += 8) {
    std::uint64_t x;
    std::memcpy(&x, s.data() + first, 8);
    if (x & 0x8080808080808080ULL) break;
  }
  bool any = false;
  for (std::size_t i = first; i < s.size() && !any; ++i)
    any = static_cast<unsigned char>(s[i]) >= 0xC2;
  if (!any) return std::nullopt;
  std::string out;
  out.reserve(s.size());
  bool changed = false;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = utf8_length(s.substr(i));
    if (len <= 1) {
      out.push_back(s[i]);
      ++i;
      continue;
    }
    std::uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    if (invisible(cp)) {
      changed = true;
      continue;
    }
    if (unicode_space(cp)) {
      out.push_back(' ');
      changed = true;
      continue;
    }
    if (const char twin = ascii_twin(cp)) {
      out.push_back(twin);
      changed = true;
      continue;
    }
    core::append_utf8(out, cp);
  }
  if (!changed) return std::nullopt;
  return out;
}

std::string printable_runs(std::string_view bytes) {
  std::string out;
  std::size_t start = 0;
  auto flush = [&](std::size_t end) {
    if (end - start < 8) return;
    out.append(bytes.substr(start, end - start));
    out.push_back('\n');
  };
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 || c >= 0x7F) {
      flush(i);
      start = i + 1;
    }
  }
  flush(bytes.size());
  return out;
}

}  // namespace airlock::filters::dlp
