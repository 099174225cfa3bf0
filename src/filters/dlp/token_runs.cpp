#include "filters/dlp/token_runs.hpp"

#include "core/ascii.hpp"

#include <algorithm>
#include <array>

namespace airlock::filters::dlp::detail {
namespace {

// What a byte is to the tokenizer, from one table.
enum byte_class : unsigned char { token = 1, hex_digit = 2, base64 = 4 };

constexpr std::array<unsigned char, 256> make_classes() {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool b64 = core::is_base64_byte(static_cast<char>(c));
    unsigned char v = 0;
    if (b64 || c == ':') v |= token;
    if (b64) v |= base64;
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) v |= hex_digit;
    t[static_cast<std::size_t>(c)] = v;
  }
  return t;
}

constexpr std::array<unsigned char, 256> kClasses = make_classes();

// A JSON escape whose letter would otherwise start a token: "\n" before a wrapped line.
bool json_letter_escape(std::string_view text, std::size_t i) noexcept {
  if (text[i] != '\\' || i + 1 >= text.size()) return false;
  const char e = text[i + 1];
  return e == 'n' || e == 'r' || e == 't' || e == 'b' || e == 'f';
}

}  // namespace

std::size_t line_break(std::string_view text, std::size_t i) noexcept {
  const std::string_view rest = text.substr(i < text.size() ? i : text.size());
  std::size_t n = 0;
  if (rest.starts_with('\n'))
    n = 1;
  else if (rest.starts_with("\r\n") || rest.starts_with("\\n"))
    n = 2;
  else if (rest.starts_with("\\r\\n"))
    n = 4;
  if (n == 0) return 0;
  // With the next line's indentation (a PEM in a YAML block scalar).
  const std::size_t most = std::min(rest.size(), n + core::kMaxWrapIndent);
  while (n < most && core::is_indent_byte(rest[n]))
    ++n;
  return n;
}

bool next_token(std::string_view text, std::size_t from, token_span& t) noexcept {
  std::size_t i = from;
  while (i < text.size() && !(kClasses[static_cast<unsigned char>(text[i])] & token))
    i += json_letter_escape(text, i) ? 2 : 1;
  if (i >= text.size()) return false;
  unsigned char all = hex_digit | base64;
  std::size_t j = i;
  for (; j < text.size(); ++j) {
    const unsigned char c = kClasses[static_cast<unsigned char>(text[j])];
    if (!(c & token)) break;
    all &= c;
  }
  std::size_t padded = j;
  while (padded < text.size() && text[padded] == '=')
    ++padded;
  t = {i, j, padded, (all & hex_digit) != 0, (all & base64) != 0};
  return true;
}

}  // namespace airlock::filters::dlp::detail
