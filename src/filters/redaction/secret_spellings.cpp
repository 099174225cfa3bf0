#include "filters/redaction/secret_spellings.hpp"

#include "core/ascii.hpp"
#include "policy/token.hpp"

#include <algorithm>
#include <cstdint>

namespace airlock::filters::redaction {
namespace {

enum class json_style { minimal, slash, html };

std::string json_escape(std::string_view in, json_style style) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(in.size() + 8);
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '/':
        out += style == json_style::slash ? "\\/" : "/";
        break;
      case '<':
      case '>':
      case '&':
        if (style == json_style::html) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += ch;
        }
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

// Percent-encoding as the common encoders write it: everything but the RFC 3986 unreserved
// characters and `keep` becomes %XX; with plus_space, a space is '+' (HTML forms).
std::string percent_encode(std::string_view in, bool upper, std::string_view keep = {},
                           bool plus_space = false) {
  const char* hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  out.reserve(in.size() * 3);
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || keep.find(ch) != std::string_view::npos) {
      out += ch;
    } else if (plus_space && ch == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> secret_base64_spellings(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() < kMinBase64Value) return out;
  auto both_alphabets = [&](std::string enc) {
    out.push_back(enc);
    std::replace(enc.begin(), enc.end(), '+', '-');
    std::replace(enc.begin(), enc.end(), '/', '_');
    if (enc != out.back()) out.push_back(std::move(enc));
  };
  both_alphabets(policy::base64_encode(value));  // alone, padded
  for (std::size_t lead = 0; lead < 3; ++lead) {
    const std::string enc = policy::base64_encode(std::string(lead, '\0') + std::string(value));
    // Character i holds bits [6i, 6i + 6); the value's are [8 lead, 8 (lead + n)).
    const std::size_t first = (8 * lead + 5) / 6, end = 8 * (lead + value.size()) / 6;
    both_alphabets(enc.substr(first, end - first));
  }
  return out;
}

std::vector<std::string> secret_hex_base32_spellings(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() < kMinBase64Value) return out;
  auto both_cases = [&](std::string enc) {
    std::string lower = core::lower(enc);
    out.push_back(std::move(enc));
    if (lower != out.back()) out.push_back(std::move(lower));
  };
  // Hex, and hex with one separator between the bytes, as one line writes it: Python's
  // bytes.hex(' ') and hex(':'), Go's "% x", colon-separated fingerprints, dashed dumps.
  for (const std::string_view separator : {"", " ", ":", "-"}) {
    std::string hex;
    for (char ch : value) {
      const auto c = static_cast<unsigned char>(ch);
      if (!hex.empty()) hex += separator;
      hex += "0123456789ABCDEF"[c >> 4];
      hex += "0123456789ABCDEF"[c & 0xf];
    }
    both_cases(std::move(hex));
  }
  // Base32: 5 bits a character, the quantum 5 bytes (8 characters, '=' padded).
  static constexpr char kBase32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  auto base32 = [](std::string_view in) {
    std::string enc;
    std::uint64_t bits = 0;
    int held = 0;
    for (char ch : in) {
      bits = bits << 8 | static_cast<unsigned char>(ch);
      for (held += 8; held >= 5; held -= 5)
        enc += kBase32[(bits >> (held - 5)) & 31];
    }
    if (held > 0) enc += kBase32[(bits << (5 - held)) & 31];
    return enc;
  };
  std::string alone = base32(value);
  both_cases(alone + std::string((8 - alone.size() % 8) % 8, '='));
  for (std::size_t lead = 0; lead < 5; ++lead) {
    const std::string enc = base32(std::string(lead, '\0') + std::string(value));
    // Character i holds bits [5i, 5i + 5); the value's are [8 lead, 8 (lead + n)).
    const std::size_t first = (8 * lead + 4) / 5, end = 8 * (lead + value.size()) / 5;
    both_cases(enc.substr(first, end - first));
  }
  return out;
}

std::vector<std::string> secret_wide_spellings(std::string_view value) {
  if (value.size() < 2 ||
      std::any_of(value.begin(), value.end(), [](char c) { return (c & 0x80) != 0; }))
    return {};
  std::vector<std::string> out;
  for (std::size_t nuls : {1, 3}) {
    std::string wide(1, value[0]);
    for (char ch : value.substr(1)) {
      wide.append(nuls, '\0');
      wide += ch;
    }
    out.push_back(std::move(wide));
  }
  return out;
}

std::vector<std::string> secret_spellings(std::string_view value) {
  std::vector<std::string> out{std::string(value)};
  auto add = [&](std::string s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  };
  add(json_escape(value, json_style::minimal));
  add(json_escape(value, json_style::slash));
  add(json_escape(value, json_style::html));
  add(percent_encode(value, true));
  add(percent_encode(value, false));
  // What the usual encoders leave as it is: Python's quote() keeps '/', JavaScript's
  // encodeURIComponent() keeps !'()*, encodeURI() the URI delimiters too; forms (Python's
  // quote_plus, URLSearchParams) write a space as '+'.
  add(percent_encode(value, true, "/"));
  add(percent_encode(value, true, "!'()*"));
  add(percent_encode(value, true, ";,/?:@&=+$#!'()*"));
  add(percent_encode(value, true, {}, true));
  add(percent_encode(value, true, "*", true));
  // Go's url.PathEscape keeps "$&+:=@"; a path segment may keep every RFC 3986 pchar (section
  // 3.3), a path the '/' too.
  add(percent_encode(value, true, "$&+:=@"));
  add(percent_encode(value, true, "!$&'()*+,;=:@"));
  add(percent_encode(value, true, "!$&'()*+,;=:@/"));
  // Encoded twice, as a URL carried in another URL's query is (a redirect's "next=").
  add(percent_encode(percent_encode(value, true), true));
  add(percent_encode(percent_encode(value, false), false));
  return out;
}

}  // namespace airlock::filters::redaction
