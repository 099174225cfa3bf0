// Outbound DLP's reading of a request (src/filters/dlp: scanner, decode, seed_phrase) and the
// response side's injection finder (injection.cpp), on any bytes, plus an evasion property.
//
// Every input is first scanned as it is, as a URL part, a header value, a body window, a query
// and one of several pieces (scan_all), and read for injection: nothing may crash, read out of
// bounds, recurse without limit or take seconds; each finding names the location it was given.
//
// Then the evasion property, which is what DLP is for: an AWS access key id built from the
// input, hidden by one of the encodings an agent (or whoever steers it) uses to slip a secret
// past a scanner, must be found as "aws-access-key" in every kind of text. The encodings:
// base64 and base64url, padded or not, also wrapped at 76 or 64 columns as `base64` and PEM
// write it; base32; hex, bare or with '-', ':' or ' ' between pairs, or in groups of four as
// `xxd -p` writes it, or whole `xxd` and `hexdump -C` dumps (on lines of their own);
// percent-encoding once or twice; zero-width characters inside; look-alike Cyrillic and Greek
// letters, full-width forms, mathematical and enclosed letters; JSON's "\u0041", "\/" and "\n"
// inside a JSON string; HTML's
// "&#65;"; gzip then base64; two of these stacked; one '=' too many after it. The hidden key
// stands between arbitrary bytes from the input, separated from them by one byte that is no
// part of a token (as any field or line is): a stray UTF-8 lead byte, a '%', a file signature
// or padding next to it must not hide it.
//
// Input: byte 0 picks the encoding, byte 1 the separators, byte 2 the kind and where the
// input is cut into the prefix and suffix, bytes 3..18 the key's 16 characters; the rest is the
// prefix and suffix.

#include "core/utf8.hpp"
#include "filters/dlp/injection.hpp"
#include "filters/dlp/scanner.hpp"
#include "fuzz_input.hpp"
#include "policy/token.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <zlib.h>

namespace airlock::fuzz {
namespace {

using filters::dlp::findings;
using filters::dlp::scanner;

const scanner& dlp() {
  static const auto s = scanner::build({{}, true, {}, {}, {}}).built;
  if (!s) fail("fuzz scanner does not build");
  return *s;
}

constexpr std::string_view kHex = "0123456789abcdef";

// Base64 (RFC 4648 section 4), or base64url (section 5), padded or not.
std::string base64(std::string_view in, bool url, bool pad) {
  std::string out = policy::base64_encode(in);
  if (url) {
    std::replace(out.begin(), out.end(), '+', '-');
    std::replace(out.begin(), out.end(), '/', '_');
  }
  if (!pad) out.erase(out.find_last_not_of('=') + 1);
  return out;
}

std::string base32(std::string_view in, bool lower) {
  const char* abc = lower ? "abcdefghijklmnopqrstuvwxyz234567" : "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  std::uint64_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out.push_back(abc[(acc >> bits) & 31]);
    }
  }
  if (bits > 0) out.push_back(abc[(acc << (5 - bits)) & 31]);
  while (out.size() % 8 != 0)
    out.push_back('=');
  return out;
}

// Hex pairs; `sep` between every pair, or, when `group` > 0, a space after every `group` pairs.
std::string hex(std::string_view in, char sep, bool upper, std::size_t group = 0) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i > 0 && sep != 0) out.push_back(sep);
    if (i > 0 && group > 0 && i % group == 0) out.push_back(' ');
    const auto c = static_cast<unsigned char>(in[i]);
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  if (upper)
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char c) { return c >= 'a' && c <= 'f' ? static_cast<char>(c - 32) : c; });
  return out;
}

std::string percent(std::string_view in) {
  std::string out;
  for (unsigned char c : in) {
    out.push_back('%');
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

// Lines of `width` characters, as `base64` (76) and PEM (64) wrap them.
std::string wrap(std::string_view in, std::size_t width, std::string_view eol) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += width) {
    if (i > 0) out.append(eol);
    out.append(in.substr(i, width));
  }
  return out;
}

// The key with a zero-width space (U+200B) or a soft hyphen (U+00AD) after every `every`
// characters.
std::string invisible_inside(std::string_view in, std::size_t every, bool soft_hyphen) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    out.push_back(in[i]);
    if ((i + 1) % every == 0 && i + 1 < in.size())
      out.append(soft_hyphen ? "\xC2\xAD" : "\xE2\x80\x8B");
  }
  return out;
}

// Latin capitals a reader cannot tell from their Cyrillic, Greek or full-width twins, swapped
// where the input's bits say so.
std::string lookalikes(std::string_view in, std::uint8_t bits) {
  std::string out;
  std::size_t i = 0;
  for (char c : in) {
    const bool swap = (bits >> (i++ % 8)) & 1;
    if (swap && c == 'A')
      out.append("\xD0\x90");  // U+0410 CYRILLIC CAPITAL LETTER A
    else if (swap && c == 'K')
      out.append("\xCE\x9A");  // U+039A GREEK CAPITAL LETTER KAPPA
    else if (swap && c >= 'A' && c <= 'Z')
      out.append({'\xEF', static_cast<char>(0xBC), static_cast<char>(0xA1 + (c - 'A'))});
    else if (swap && c >= '0' && c <= '9')
      out.append({'\xEF', static_cast<char>(0xBC), static_cast<char>(0x90 + (c - '0'))});
    else
      out.push_back(c);
  }
  return out;
}

// JSON's \u escapes for the characters the input's bits pick ("\u0041KIA..."), as any JSON
// encoder may write them and any JSON parser reads them.
std::string json_u(std::string_view in, std::uint8_t bits) {
  std::string out;
  std::size_t i = 0;
  for (unsigned char c : in) {
    if ((bits >> (i++ % 8)) & 1) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// The key's letters and digits as the mathematical ones of one of 13 styles (U+1D400 + 52 per
// style: "𝐀𝐊𝐈𝐀" in bold) where the input's bits say so; the digits in one of 5 styles.
// Unicode leaves a hole in a mathematical alphabet where Letterlike Symbols already had the
// letter (script B is U+212C, not U+1D49D): those capitals of the script, fraktur and
// double-struck styles, as text has them.
char32_t letterlike_capital(unsigned style, char c) {
  static constexpr std::array<std::pair<char, char32_t>, 8> kScript{{{'B', 0x212C},
                                                                     {'E', 0x2130},
                                                                     {'F', 0x2131},
                                                                     {'H', 0x210B},
                                                                     {'I', 0x2110},
                                                                     {'L', 0x2112},
                                                                     {'M', 0x2133},
                                                                     {'R', 0x211B}}};
  static constexpr std::array<std::pair<char, char32_t>, 5> kFraktur{
      {{'C', 0x212D}, {'H', 0x210C}, {'I', 0x2111}, {'R', 0x211C}, {'Z', 0x2128}}};
  static constexpr std::array<std::pair<char, char32_t>, 7> kDoubleStruck{{{'C', 0x2102},
                                                                           {'H', 0x210D},
                                                                           {'N', 0x2115},
                                                                           {'P', 0x2119},
                                                                           {'Q', 0x211A},
                                                                           {'R', 0x211D},
                                                                           {'Z', 0x2124}}};
  auto in = [c](const auto& table) -> char32_t {
    for (const auto& [letter, cp] : table)
      if (letter == c) return cp;
    return 0;
  };
  return style == 3 ? in(kScript) : style == 5 ? in(kFraktur) : style == 6 ? in(kDoubleStruck) : 0;
}

std::string utf8(char32_t cp) {
  std::string out;
  core::append_utf8(out, cp);
  return out;
}

// The key's capitals as squared, negative circled or negative squared letters or regional
// indicators (U+1F130.. + 26 each), where the input's bits say so.
std::string enclosed_letters(std::string_view in, std::uint8_t bits, unsigned kind) {
  static constexpr std::array<char32_t, 4> kFirst{0x1F130, 0x1F150, 0x1F170, 0x1F1E6};
  std::string out;
  std::size_t i = 0;
  for (char c : in) {
    if (((bits >> (i++ % 8)) & 1) && c >= 'A' && c <= 'Z')
      out.append(utf8(kFirst[kind % 4] + static_cast<char32_t>(c - 'A')));
    else
      out.push_back(c);
  }
  return out;
}

std::string math_letters(std::string_view in, std::uint8_t bits, unsigned style) {
  std::string out;
  std::size_t i = 0;
  for (char c : in) {
    char32_t cp = 0;
    if ((bits >> (i++ % 8)) & 1) {
      if (c >= 'A' && c <= 'Z') cp = letterlike_capital(style, c);
      if (c >= 'A' && c <= 'Z' && cp == 0) cp = 0x1D400 + 52 * style + (c - 'A');
      if (c >= '0' && c <= '9') cp = 0x1D7CE + 10 * (style % 5) + (c - '0');
    }
    if (cp == 0) {
      out.push_back(c);
      continue;
    }
    out.append(utf8(cp));
  }
  return out;
}

// HTML character references for the characters the input's bits pick ("&#65;KIA", "&#x4b;").
std::string html_references(std::string_view in, std::uint8_t bits) {
  std::string out;
  std::size_t i = 0;
  for (unsigned char c : in) {
    const std::size_t bit = i++ % 8;
    if (((bits >> bit) & 1) == 0)
      out.push_back(static_cast<char>(c));
    else if (bit % 2 == 0)
      out.append("&#" + std::to_string(c) + ";");
    else
      out.append({'&', '#', 'x', kHex[c >> 4], kHex[c & 15], ';'});
  }
  return out;
}

// '/' written "\/", as PHP's json_encode and others do.
std::string json_slash(std::string_view in) {
  std::string out;
  for (char c : in) {
    if (c == '/') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// `gzip -c FILE`, as zlib's deflate writes it with a gzip header (windowBits 16 + 15).
std::string gzip(std::string_view in) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail("deflateInit2");
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) fail("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A hex dump as `xxd` (`xxd_style`) or `hexdump -C` writes it: 16 bytes a line, each line an
// offset, the bytes in hex, and the bytes as text.
std::string hexdump(std::string_view in, bool xxd_style) {
  std::string out = "\n";
  char offset[16];
  for (std::size_t at = 0; at < in.size(); at += 16) {
    const std::string_view row = in.substr(at, 16);
    std::snprintf(offset, sizeof offset, xxd_style ? "%08zx:" : "%08zx ", at);
    out.append(offset);
    std::string cols;
    for (std::size_t i = 0; i < 16; ++i) {
      if (xxd_style ? i % 2 == 0 : true) cols.push_back(' ');
      if (!xxd_style && i == 8) cols.push_back(' ');
      cols.append(i < row.size() ? hex(row.substr(i, 1), 0, false) : "  ");
    }
    out.append(cols).append(xxd_style ? "  " : "  |");
    for (char c : row)
      out.push_back(c >= 0x20 && c < 0x7F ? c : '.');
    out.append(xxd_style ? "\n" : "|\n");
  }
  return out;
}

// Some text around the key inside what is encoded, as a file holds it: "[default]\n..." then
// the key, then more.
std::string in_file(std::string_view key, std::string_view before, std::string_view after) {
  return std::string(before) + " = " + std::string(key) + "\n" + std::string(after);
}

std::string hide(std::string_view key, std::uint8_t how, std::string_view filler) {
  const std::string_view head = filler.substr(0, std::min<std::size_t>(filler.size(), 61));
  const std::string_view tail = filler.substr(head.size(), 40);
  switch (how % 36) {
    case 0:
      return std::string(key);
    case 1:
      return base64(key, false, true);
    case 2:
      return base64(key, false, false);
    case 3:
      return base64(key, true, false);
    case 4:
      return base32(key, false);
    case 5:
      return base32(key, true);
    case 6:
      return hex(key, 0, false);
    case 7:
      return hex(key, 0, true);
    case 8:
      return hex(key, '-', false);
    case 9:
      return hex(key, ':', true);
    case 10:
      return hex(key, ' ', false);
    case 11:
      return hex(key, 0, false, 2);  // xxd: "414b 4941 ..."
    case 12:
      return percent(key);
    case 13:
      return percent(percent(key));
    case 14:
      return percent(base64(key, false, true));
    case 15:
      return invisible_inside(key, 1 + how / 36 % 5, false);
    case 16:
      return invisible_inside(key, 1 + how / 36 % 5, true);
    case 17:
      return lookalikes(key, static_cast<std::uint8_t>(how * 37));
    case 18:
      return base64(base64(key, false, true), false, true);
    case 19:
      return hex(base64(key, true, false), 0, false);
    case 20:
      return base64(hex(key, 0, false), false, false);
    case 21:
      return wrap(base64(in_file(key, head, tail), false, true), 76, "\n");
    case 22:
      return wrap(base64(in_file(key, head, tail), false, true), 64, "\r\n");
    case 23:
      return wrap(base64(in_file(key, head, tail), false, true), 76, "\r\n");
    case 24:
      return base64(key, false, true) + "=";  // one '=' too many
    case 25:
      return hex(key, 0, false) + "=";
    case 26:
      return json_u(key, static_cast<std::uint8_t>(how * 53));
    case 27:
      return wrap(base64(in_file(key, head, tail), false, true), 76, "\\n");
    case 28:
      return json_slash(base64(in_file(key, head, tail), false, true));
    case 29:
      return base64(gzip(in_file(key, head, tail)), false, true);
    case 30:
      return wrap(base64(gzip(in_file(key, head, tail)), false, true), 76, "\n");
    case 31:
      return hexdump(in_file(key, head, tail), true);
    case 32:
      return hexdump(in_file(key, head, tail), false);
    case 33:
      return html_references(key, static_cast<std::uint8_t>(how * 29));
    case 34:
      return math_letters(key, static_cast<std::uint8_t>(how * 43), how / 36 % 13);
    default:
      return enclosed_letters(key, static_cast<std::uint8_t>(how * 43), how / 36);
  }
}

// Bytes that end a token wherever a secret travels (a field, a line, a JSON string). The
// first twelve also end a run of hex pairs or of base64 lines: a space or a line break would
// join the bytes next to it to the run, and the decoded key to them ("...EXAMPLEw"), which
// hides it as gluing letters to it in plain text does (the class's pattern wants it alone).
constexpr std::array<char, 16> kSeparators{'&', ',', ';', '"', '\'', '<',  '>',  '(',
                                           ')', '[', ']', '|', ' ',  '\n', '\t', '\r'};

// The encodings (hide()) that write a run of tokens: hex pairs with spaces, base64 in lines.
bool writes_a_run(std::uint8_t how) {
  switch (how % 36) {
    case 10:
    case 11:
    case 21:
    case 22:
    case 23:
    case 27:
    case 30:
      return true;
    default:
      return false;
  }
}

constexpr std::array<scanner::kind, 3> kKinds{scanner::kind::url, scanner::kind::header,
                                              scanner::kind::body};

bool has(const findings& f, std::string_view cls, std::string_view location) {
  return std::any_of(f.begin(), f.end(),
                     [&](const auto& x) { return x.cls == cls && x.location == location; });
}

void check_locations(const findings& f, std::string_view location) {
  for (const auto& x : f)
    if (x.cls.empty() || x.location != location) fail("a finding under the wrong location");
}

void scan_as_given(std::string_view text) {
  for (auto k : kKinds) {
    findings f;
    dlp().scan(text, k, "piece", f);
    check_locations(f, "piece");
  }
  findings q;
  dlp().scan_query(text, q);
  check_locations(q, "query");
  (void)filters::dlp::find_injection(text);
}

// Whether `text` ends in a character reference without its ';' ("&#65", "&#x4", "&amp").
bool ends_in_open_reference(std::string_view text) {
  const auto amp = text.rfind('&');
  if (amp == std::string_view::npos) return false;
  const std::string_view rest = text.substr(amp + 1);
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) {
    return c == '#' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

// The text that hid the key, printed before the property fails, for whoever reads the log.
[[noreturn]] void missed(std::string_view text, const char* what) {
  std::string shown;
  for (unsigned char c : text.substr(0, 1024)) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      shown.push_back(static_cast<char>(c));
    } else {
      shown.append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
    }
  }
  std::fprintf(stderr, "text: %s\n", shown.c_str());
  fail(what);
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock::fuzz;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  scan_as_given(in);

  const std::uint8_t how = take_byte(in);
  const std::uint8_t seps = take_byte(in);
  const std::uint8_t cut = take_byte(in);
  std::string key = "AKIA";
  for (int i = 0; i < 16; ++i) {
    const std::uint8_t b = take_byte(in);
    key.push_back(static_cast<char>(b % 36 < 26 ? 'A' + b % 36 : '0' + (b % 36 - 26)));
  }
  const std::size_t at = in.empty() ? 0 : (cut * in.size()) / 255;
  const std::size_t choices = writes_a_run(how) ? 12 : 16;
  // A '&' after the key with "#65;" after it is a character reference for a letter glued to
  // the key: a key glued to letters is not one (fuzz/README.md, what is left), so a space.
  char after = kSeparators[seps / 16 % choices];
  if (after == '&' && in.substr(at).starts_with('#')) after = ' ';
  // The same before it: a ';' after a reference the text before ends in ("&#65") completes it,
  // a letter glued to the key.
  char before = kSeparators[seps % 16 % choices];
  if (before == ';' && ends_in_open_reference(in.substr(0, at))) before = ' ';
  const std::string text = std::string(in.substr(0, at)) + before + hide(key, how, in) + after +
                           std::string(in.substr(at));
  const auto how_kind = kKinds[cut % 3];
  airlock::filters::dlp::findings f;
  dlp().scan(text, how_kind, "piece", f);
  if (!has(f, "aws-access-key", "piece")) missed(text, "a hidden key was not found");
  // The same text as one of several pieces (scan_all's joined first look must not hide it).
  f.clear();
  dlp().scan_all({{"GET /index.html", scanner::kind::url, "path"},
                  {text, how_kind, "piece"},
                  {"text/plain", scanner::kind::header, "header"}},
                 f);
  if (!has(f, "aws-access-key", "piece")) missed(text, "a hidden key was not found among pieces");
  return 0;
}
