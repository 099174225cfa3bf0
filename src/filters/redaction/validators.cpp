#include "filters/redaction/validators.hpp"

#include <array>
#include <cstring>

namespace airlock::filters::redaction::validators {
namespace {

bool is_digit(int c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_alnum(int c) {
  return is_digit(c) || is_alpha(c);
}
bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_b64url(int c) {
  return is_alnum(c) || c == '_' || c == '-';
}
bool one_of(int c, const char* set) {
  return c > 0 && std::strchr(set, c) != nullptr;
}

// Whether the backslash at before(k) starts an escape, i.e. it is preceded by an even number of
// backslashes (RFC 8259 section 7: "\\" is an escaped backslash, not an escape introducer).
bool escape_starts_at(const candidate& c, std::size_t k) {
  std::size_t run = 0;
  while (c.before(k + run) == '\\')
    ++run;
  return run % 2 == 1;
}

}  // namespace

bool luhn_ok(std::string_view digits) noexcept {
  int sum = 0;
  bool twice = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int d = *it - '0';
    if (twice) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    twice = !twice;
  }
  return !digits.empty() && sum % 10 == 0;
}

bool card_scheme_ok(std::string_view d) noexcept {
  const auto n = d.size();
  if (n < 13 || n > 19) return false;
  auto prefix = [&](std::size_t k) {
    int v = 0;
    for (std::size_t i = 0; i < k; ++i)
      v = v * 10 + (d[i] - '0');
    return v;
  };
  const int p2 = prefix(2), p3 = prefix(3), p4 = prefix(4);
  const bool long_range = n >= 16;                        // the 16..19 digit schemes
  if (d[0] == '4') return n == 13 || n == 16 || n == 19;  // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n == 16;   // Mastercard
  if (p2 == 34 || p2 == 37) return n == 15;                                   // Amex
  if (p4 == 6011 || (p3 >= 644 && p3 <= 649) || p2 == 65) return long_range;  // Discover
  if (p2 == 62) return long_range;                                            // UnionPay
  if ((p3 >= 300 && p3 <= 305) || p4 == 3095 || p2 == 36 || p2 == 38 || p2 == 39)
    return n >= 14;                                     // Diners
  if (p4 >= 3528 && p4 <= 3589) return long_range;      // JCB
  if (p4 >= 2200 && p4 <= 2204) return long_range;      // Mir
  if (p2 == 50 || (p2 >= 56 && p2 <= 69)) return true;  // Maestro
  return false;
}

bool token_starts_at(const candidate& c, bool (*is_token_byte)(int)) noexcept {
  const int b = c.before();
  if (b < 0 || !is_token_byte(b)) return true;
  // "...\nTOKEN" inside a JSON string: the byte before is the letter of an escape.
  if (one_of(b, "bfnrt") && c.before(2) == '\\' && escape_starts_at(c, 2)) return true;
  if (is_hex(b) && is_hex(c.before(2)) && is_hex(c.before(3)) && is_hex(c.before(4)) &&
      c.before(5) == 'u' && c.before(6) == '\\' && escape_starts_at(c, 6))
    return true;
  return false;
}

bool token_ends_at(const candidate& c, bool (*is_token_byte)(int)) noexcept {
  const int a = c.after();
  return a < 0 || !is_token_byte(a);
}

verdict alnum_bounded(const candidate& c) {
  if (!token_starts_at(c, is_alnum) || !token_ends_at(c, is_alnum)) return verdict::reject();
  return verdict::accept(c);
}

verdict alnum_bounded_trim(const candidate& c) {
  candidate t = c;
  while (t.end > t.begin + 1 && one_of(t.text[t.end - 1], ".-"))
    --t.end;
  if (!token_starts_at(t, is_alnum) || !token_ends_at(c, is_alnum)) return verdict::reject();
  return verdict::accept(t);
}

verdict gcp_api_key(const candidate& c) {
  if (!token_starts_at(c, is_b64url) || !token_ends_at(c, is_b64url)) return verdict::reject();
  return verdict::accept(c);
}

verdict aws_secret_key(const candidate& c) {
  const int a = c.after();
  if (is_alnum(a) || a == '+' || a == '/' || a == '=' || (a == '\\' && c.after(1) == '/'))
    return verdict::reject();
  bool upper = false, lower = false, digit = false;
  for (char ch : c.span()) {
    upper |= ch >= 'A' && ch <= 'Z';
    lower |= ch >= 'a' && ch <= 'z';
    digit |= is_digit(ch);
  }
  if (int(upper) + int(lower) + int(digit) < 2) return verdict::reject();
  return verdict::accept(c);
}

verdict jwt(const candidate& c) {
  if (!token_starts_at(c, is_b64url)) return verdict::reject();
  const std::string_view s = c.span();
  const auto dot = s.find('.');
  if (dot == std::string_view::npos) return verdict::reject();
  // Decode at most the first 1 KiB of the header: enough to find "alg" in any real header.
  const std::string_view header = s.substr(0, dot < 1024 ? dot : 1024);
  std::array<char, 768> plain{};
  std::size_t n = 0;
  unsigned bits = 0, acc = 0;
  for (char ch : header) {
    int v;
    if (ch >= 'A' && ch <= 'Z')
      v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z')
      v = ch - 'a' + 26;
    else if (is_digit(ch))
      v = ch - '0' + 52;
    else if (ch == '-')
      v = 62;
    else if (ch == '_')
      v = 63;
    else
      return verdict::reject();
    acc = (acc << 6) | unsigned(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < plain.size()) plain[n++] = static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (std::string_view(plain.data(), n).find("\"alg\"") == std::string_view::npos)
    return verdict::reject();
  return verdict::accept(c);
}

verdict email(const candidate& c) {
  const std::string_view s = c.span();
  const auto at = s.find('@');
  if (at == std::string_view::npos) return verdict::reject();
  const std::size_t resume = c.begin + at + 1;  // every match starting before '@' ends alike
  std::size_t b = c.begin;
  if (c.before() == '\\' && escape_starts_at(c, 1)) {
    if (s[0] == 'u' && at >= 5 && is_hex(s[1]) && is_hex(s[2]) && is_hex(s[3]) && is_hex(s[4]))
      b += 5;
    else if (one_of(s[0], "bfnrt"))
      b += 1;
  }
  if (b >= c.begin + at) return verdict::reject(resume);
  // File names with a density suffix ("logo@2x.png") look like addresses; no mail domain ends
  // in these (the ones that are also country TLDs, e.g. .md, are kept as addresses).
  static constexpr std::string_view kFileSuffixes[] = {
      "png",  "jpg",  "jpeg", "gif", "svg", "webp", "ico", "bmp",  "tif",
      "tiff", "avif", "css",  "js",  "mjs", "cjs",  "map", "json", "html",
      "htm",  "txt",  "pdf",  "zip", "gz",  "tgz",  "xml", "yml",  "yaml"};
  const std::string_view tld = s.substr(s.rfind('.') + 1);
  for (std::string_view suffix : kFileSuffixes) {
    if (tld.size() != suffix.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < tld.size() && same; ++i)
      same = (tld[i] | 0x20) == suffix[i];
    if (same) return verdict::reject(resume);
  }
  return verdict::accept(b, c.end);
}

verdict payment_card(const candidate& c) {
  const std::string_view m = c.span();
  // Groups of digits separated by one ' ' or '-' (the pattern allows nothing else).
  struct group {
    std::size_t b, e;
  };
  std::array<group, 20> g{};
  std::array<char, 20> sep{};
  std::size_t ng = 0;
  for (std::size_t i = 0; i < m.size() && ng < g.size();) {
    const std::size_t b = i;
    while (i < m.size() && is_digit(m[i]))
      ++i;
    sep[ng] = i < m.size() ? m[i] : '\0';
    g[ng++] = {b, i};
    if (i < m.size()) ++i;
  }
  const std::size_t resume = ng > 1 ? c.begin + g[1].b : c.end;
  for (std::size_t gi = 0; gi < ng; ++gi) {
    if (gi == 0) {
      const int b = c.before();
      if (one_of(b, "_.+-") || (b >= 0 && is_alnum(b) && !token_starts_at(c, is_alnum))) continue;
    }
    for (std::size_t gj = ng; gj-- > gi;) {
      if (gj == ng - 1) {
        const int a = c.after();
        if (is_alnum(a) || a == '_') continue;
        // 4111...1111.50 is a decimal; a ',' before a digit is a CSV field separator here
        // ("4111...1111,12/28"): a 13..19-digit amount with a decimal comma is not a thing.
        if (a == '.' && is_digit(c.after(1))) continue;
      }
      std::array<char, 20> digits{};
      std::size_t nd = 0;
      bool shape_ok = true;
      for (std::size_t k = gi; k <= gj && shape_ok; ++k) {
        const std::size_t len = g[k].e - g[k].b;
        if (nd + len > 19) shape_ok = false;
        if (gj > gi) {  // separated: 4-digit first group, 3..6-digit groups, one separator
          if (k == gi && len != 4) shape_ok = false;
          if (len < 3 || len > 6) shape_ok = false;
          if (k < gj && sep[k] != sep[gi]) shape_ok = false;
        }
        for (std::size_t i = g[k].b; i < g[k].e && shape_ok; ++i)
          digits[nd++] = m[i];
      }
      const std::string_view number(digits.data(), nd);
      if (shape_ok && card_scheme_ok(number) && luhn_ok(number))
        return verdict::accept(c.begin + g[gi].b, c.begin + g[gj].e);
    }
  }
  return verdict::reject(resume);
}

verdict phone(const candidate& c) {
  const std::string_view m = c.span();
  const int b = c.before();
  if (one_of(b, "_+.-/") || (b >= 0 && is_alnum(b) && !token_starts_at(c, is_alnum)))
    return verdict::reject();
  const int a = c.after();
  if (is_alnum(a) || a == '_') return verdict::reject();
  if (one_of(a, ".-/") && is_digit(c.after(1))) return verdict::reject();
  // '.' is a separator only on its own ("415.555.0132"), never mixed with ' ' or '-'.
  bool dot = false, other = false;
  for (char ch : m) {
    dot |= ch == '.';
    other |= ch == ' ' || ch == '-';
  }
  if (dot && other) return verdict::reject();
  if (m[0] != '+' || m.find('(') != std::string_view::npos) return verdict::accept(c);
  // E.164 with separators: groups of two digits or more after the first two; one trailing lone
  // digit ("+1 415 555 0132 2 times") is left out of the span.
  std::size_t end = m.size(), digits = 0, groups = 0, last_group_begin = 1;
  bool short_inner = false;
  for (std::size_t i = 1; i < m.size();) {
    const std::size_t gb = i;
    while (i < m.size() && is_digit(m[i]))
      ++i;
    // One digit is fine right after the country code ("+33 1 23 45 67 89"), not later.
    if (groups > 1 && i - gb < 2 && i < m.size()) short_inner = true;
    digits += i - gb;
    last_group_begin = gb;
    ++groups;
    if (i < m.size()) ++i;
  }
  if (short_inner) return verdict::reject();
  if (groups > 1 && m.size() - last_group_begin == 1) {
    end = last_group_begin - 1;
    --digits;
  }
  if (digits < 8) return verdict::reject();
  return verdict::accept(c.begin, c.begin + end);
}

}  // namespace airlock::filters::redaction::validators
