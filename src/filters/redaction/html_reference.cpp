#include "filters/redaction/html_reference.hpp"

#include "core/ascii.hpp"

namespace airlock::filters::redaction {
namespace {

// WHATWG HTML 13.5, "Named character references": every name (with ';') whose character is
// ASCII.
struct ascii_name {
  std::string_view name;
  std::string_view text;
};
constexpr ascii_name kAsciiNames[] = {
    {"AMP", "&"},      {"DiacriticalGrave", "`"},
    {"GT", ">"},       {"Hat", "^"},
    {"LT", "<"},       {"NewLine", "\n"},
    {"QUOT", "\""},    {"Tab", "\t"},
    {"UnderBar", "_"}, {"VerticalLine", "|"},
    {"amp", "&"},      {"apos", "'"},
    {"ast", "*"},      {"bsol", "\\"},
    {"colon", ":"},    {"comma", ","},
    {"commat", "@"},   {"dollar", "$"},
    {"equals", "="},   {"excl", "!"},
    {"grave", "`"},    {"gt", ">"},
    {"lbrace", "{"},   {"lbrack", "["},
    {"lcub", "{"},     {"lowbar", "_"},
    {"lpar", "("},     {"lsqb", "["},
    {"lt", "<"},       {"midast", "*"},
    {"num", "#"},      {"percnt", "%"},
    {"period", "."},   {"plus", "+"},
    {"quest", "?"},    {"quot", "\""},
    {"rbrace", "}"},   {"rbrack", "]"},
    {"rcub", "}"},     {"rpar", ")"},
    {"rsqb", "]"},     {"semi", ";"},
    {"sol", "/"},      {"verbar", "|"},
    {"vert", "|"},     {"fjlig", "fj"},  // (the one name for two characters)
};

}  // namespace

std::string_view named_reference(std::string_view name) noexcept {
  for (const auto& [n, text] : kAsciiNames)
    if (n == name) return text;
  return {};
}

bool named_reference_without_semicolon(std::string_view name) noexcept {
  return name == "amp" || name == "AMP" || name == "lt" || name == "LT" || name == "gt" ||
         name == "GT" || name == "quot" || name == "QUOT";
}

std::size_t legacy_reference_prefix(std::string_view name) noexcept {
  for (const std::size_t n : {4, 3, 2})
    if (name.size() >= n && named_reference_without_semicolon(name.substr(0, n))) return n;
  return 0;
}

named_read read_named_reference(std::string_view name, bool semicolon_follows) noexcept {
  if (const auto named = named_reference(name); semicolon_follows && !named.empty())
    return {named, name.size(), true};
  const std::size_t legacy = legacy_reference_prefix(name);
  if (legacy == 0) return {};
  return {named_reference(name.substr(0, legacy)), legacy, false};
}

int one_letter_escape(unsigned char c) noexcept {
  switch (c) {
    case '"':
    case '\\':
    case '/':
    case '\'':  // (JavaScript)
      return c;
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return -1;
  }
}

int reference_digit(char c, bool hex) noexcept {
  if (hex) return core::hex_value(c);
  return c >= '0' && c <= '9' ? c - '0' : -1;
}

char32_t numeric_reference_value(char32_t value) noexcept {
  if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0xFFFD;
  return value;
}

char32_t numeric_reference_digit(char32_t value, int digit, bool hex) noexcept {
  if (value > 0x10FFFF) return value;
  return value * (hex ? 16 : 10) + static_cast<char32_t>(digit);
}

}  // namespace airlock::filters::redaction
