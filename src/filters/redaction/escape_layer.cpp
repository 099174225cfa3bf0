// One layer of the escape guard (escape_layer.hpp).
#include "filters/redaction/escape_layer.hpp"

#include "core/ascii.hpp"
#include "core/utf8.hpp"
#include "filters/redaction/html_reference.hpp"

#include <algorithm>

namespace airlock::filters::redaction {
namespace {

int hex_value(unsigned char c) noexcept {
  return core::hex_value(static_cast<char>(c));
}

}  // namespace

bool escape_layer::skips_wrap(unsigned char c) noexcept {
  // One break (LF, CRLF or CR) right after a character of the base64, base64url, base32 or hex
  // alphabets (core::is_base64_byte; not after '=' padding, which ends encoded text): MIME wraps
  // base64 at 76 characters (RFC 2045 section 6.8, whose decoders skip the breaks), PEM at 64 (RFC
  // 7468), xxd -p hex at 60. With the indentation after it, up to core::kMaxWrapIndent spaces or
  // tabs: a PEM in a YAML block scalar. A blank line, or a break after other text, is read as
  // written.
  if (line_break_ != 0 && core::is_indent_byte(static_cast<char>(c))) {
    if (indent_ == core::kMaxWrapIndent) return false;
    ++indent_;
    return true;
  }
  if ((c != '\n' && c != '\r') || !core::is_base64_byte(static_cast<char>(last_))) return false;
  if (line_break_ != 0 && !(line_break_ == '\r' && c == '\n' && indent_ == 0)) return false;
  line_break_ = c;
  return true;
}

bool escape_layer::flush_high(std::uint64_t from, escape_layer* next) {
  if (high_ == 0) return true;
  high_ = 0;
  return read_code_point(0xFFFD, from, next);
}

bool escape_layer::read(unsigned char c, std::uint64_t from, escape_layer* next) {
  // A high surrogate that this byte does not complete stands alone: it comes first (a
  // client's string holds it, and the byte right after it).
  if (!flush_high(from, next)) return false;
  // (A break this layer skips is still part of the text the next one decodes.)
  if (skips_wrap(c)) return next == nullptr || next->take(c, from, nullptr);
  last_ = c;
  line_break_ = 0;
  indent_ = 0;
  origin_[decoded_ % reach_] = from;
  ++decoded_;
  if (starts_.advance(st_, c)) return false;
  return next == nullptr || next->take(c, from, nullptr);
}

bool escape_layer::read_plain(unsigned char c, std::uint64_t at, escape_layer* next) {
  if (skips_wrap(c)) return next == nullptr || next->read_plain(c, at, nullptr);
  last_ = c;
  line_break_ = 0;
  indent_ = 0;
  origin_[decoded_ % reach_] = at;
  ++decoded_;
  if (starts_.advance(st_, c)) return false;
  return next == nullptr || next->read_plain(c, at, nullptr);
}

bool escape_layer::read_code_point(char32_t cp, std::uint64_t from, escape_layer* next) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) cp = 0xFFFD;
  utf8_.clear();
  core::append_utf8(utf8_, cp);
  for (unsigned char c : utf8_)
    if (!read(c, from, next)) return false;
  return true;
}

bool escape_layer::read_escaped(char32_t cp, std::uint64_t from, escape_layer* next) {
  // JSON's \u0000 and JavaScript's \x00 are a NUL to their parsers (RFC 8259 section 7), where
  // an HTML reference to 0 is U+FFFD: a value written out in UTF-16 inside a JSON string reads
  // as its bytes with NULs between them.
  return cp == 0 ? read(0, from, next) : read_code_point(cp, from, next);
}

std::uint64_t escape_layer::hold_from(std::uint64_t end) const noexcept {
  std::uint64_t from = end;
  if (mode_ != mode::text || high_ != 0) from = std::min(from, escape_at_);
  if (const std::size_t d = starts_.depth(st_); d > 0)
    from = std::min(from, origin_[(decoded_ - d) % reach_]);
  return from;
}

bool escape_layer::take(unsigned char c, std::uint64_t at, escape_layer* next) {
  switch (mode_) {
    case mode::text:
      if (c == '\\' || c == '&' || c == '%') {
        mode_ = c == '\\' ? mode::backslash : c == '&' ? mode::amp : mode::percent;
        escape_at_ = at;
        digits_ = 0;
        value_ = 0;
        return true;
      }
      return read(c, at, next);
    case mode::backslash:
      return take_backslash(c, at, next);
    case mode::json_hex:
    case mode::js_hex:
    case mode::js_braces:
      return take_hex(c, at, next);
    case mode::percent:
      return take_percent(c, at, next);
    case mode::amp:
      if (c == '#') {
        mode_ = mode::amp_hash;
        return true;
      }
      if (core::is_alnum(static_cast<char>(c))) {
        mode_ = mode::amp_name;
        name_.assign(1, static_cast<char>(c));
        return true;
      }
      mode_ = mode::text;
      return read('&', escape_at_, next) && take(c, at, next);
    case mode::amp_name:
      return take_name(c, at, next);
    case mode::amp_hash:
      mode_ = mode::amp_digits;
      value_ = 0;
      digits_ = 0;
      hex_ = c == 'x' || c == 'X';
      if (hex_) return true;
      return take(c, at, next);
    case mode::amp_digits:
      return take_digits(c, at, next);
  }
  return true;
}

bool escape_layer::take_backslash(unsigned char c, std::uint64_t at, escape_layer* next) {
  mode_ = mode::text;
  if (c == 'u' || c == 'x') {  // \uXXXX (JSON, JavaScript), \u{X...} and \xXX (JavaScript)
    mode_ = c == 'u' ? mode::json_hex : mode::js_hex;
    value_ = 0;
    digits_ = 0;
    return true;
  }
  if (const int e = one_letter_escape(c); e >= 0)
    return read(static_cast<unsigned char>(e), escape_at_, next);
  return read('\\', escape_at_, next) && take(c, at, next);  // not an escape: as written
}

bool escape_layer::take_hex(unsigned char c, std::uint64_t at, escape_layer* next) {
  if (mode_ == mode::json_hex && digits_ == 0 && c == '{') {
    mode_ = mode::js_braces;
    return true;
  }
  if (mode_ == mode::js_braces && c == '}' && digits_ > 0) {
    mode_ = mode::text;
    return read_escaped(value_, escape_at_, next);
  }
  const int v = hex_value(c);
  if (v < 0) {  // a parser refuses it: what follows is read as written
    mode_ = mode::text;
    return take(c, at, next);
  }
  value_ = numeric_reference_digit(value_, v, true);
  ++digits_;
  if (mode_ == mode::js_braces) {
    if (digits_ <= kMaxReferenceDigits) return true;
    too_long_ = true;
    return false;
  }
  if (digits_ < (mode_ == mode::js_hex ? 2u : 4u)) return true;
  const bool js = mode_ == mode::js_hex;
  mode_ = mode::text;
  const char32_t cp = value_;
  if (js) return read_escaped(cp, escape_at_, next);
  if (cp >= 0xD800 && cp < 0xDC00) {                  // its low half follows as another \u escape
    if (!flush_high(escape_at_, next)) return false;  // (two high halves: the first alone)
    high_ = cp;
    return true;
  }
  if (cp >= 0xDC00 && cp < 0xE000 && high_ != 0) {
    const char32_t whole = 0x10000 + ((high_ - 0xD800) << 10) + (cp - 0xDC00);
    high_ = 0;
    return read_code_point(whole, escape_at_, next);
  }
  return read_escaped(cp, escape_at_, next);
}

bool escape_layer::take_percent(unsigned char c, std::uint64_t at, escape_layer* next) {
  // RFC 3986 section 2.1, as a URL decoder reads it.
  const int v = hex_value(c);
  if (v < 0) {
    mode_ = mode::text;
    if (!read('%', escape_at_, next)) return false;
    if (digits_ == 1 && !read(static_cast<unsigned char>(pct_first_), escape_at_, next))
      return false;
    return take(c, at, next);
  }
  if (digits_++ == 0) {
    pct_first_ = static_cast<char>(c);
    value_ = static_cast<std::uint32_t>(v);
    return true;
  }
  mode_ = mode::text;
  return read(static_cast<unsigned char>(value_ * 16 + static_cast<std::uint32_t>(v)), escape_at_,
              next);
}

bool escape_layer::take_digits(unsigned char c, std::uint64_t at, escape_layer* next) {
  // (Leading zeros included, as a browser reads them: "&#0000115;" is "s".)
  const int v = reference_digit(static_cast<char>(c), hex_);
  if (v >= 0) {
    value_ = numeric_reference_digit(value_, v, hex_);
    if (++digits_ <= kMaxReferenceDigits) return true;
    too_long_ = true;
    return false;
  }
  mode_ = mode::text;
  if (digits_ == 0) {  // "&#" or "&#x" and no digit: as written
    if (!read('&', escape_at_, next) || !read('#', escape_at_, next)) return false;
    if (hex_ && !read('x', escape_at_, next)) return false;
    return take(c, at, next);
  }
  if (!read_code_point(numeric_reference_value(value_), escape_at_, next)) return false;
  return c == ';' || take(c, at, next);
}

bool escape_layer::take_name(unsigned char c, std::uint64_t at, escape_layer* next) {
  if (core::is_alnum(static_cast<char>(c)) && name_.size() < kMaxReferenceName) {
    name_.push_back(static_cast<char>(c));
    return true;
  }
  mode_ = mode::text;
  // (A copy: reading it may hand bytes to the next layer, never to this one's name_.)
  const std::string name = name_;
  const auto r = read_named_reference(name, c == ';');
  for (const char n : r.used > 0 ? r.text : std::string_view("&"))
    if (!read(static_cast<unsigned char>(n), escape_at_, next)) return false;
  for (const char n : std::string_view(name).substr(r.used))  // (the rest as written)
    if (!read(static_cast<unsigned char>(n), escape_at_, next)) return false;
  if (r.semicolon) return true;
  return take(c, at, next);
}

}  // namespace airlock::filters::redaction
