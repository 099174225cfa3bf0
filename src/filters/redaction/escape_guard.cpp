// A secret behind escapes (escape_guard.hpp).
#include "filters/redaction/escape_guard.hpp"

#include "filters/redaction/html_reference.hpp"

#include "core/ascii.hpp"
#include "core/utf8.hpp"

#include <algorithm>
#include <cstring>

namespace airlock::filters::redaction {
namespace {

int hex_value(unsigned char c) noexcept {
  return core::hex_value(static_cast<char>(c));
}

// RFC 8259 section 7: the one-letter escapes.
int json_escape(unsigned char c) {
  switch (c) {
    case '"':
    case '\\':
    case '/':
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

}  // namespace

escape_guard::escape_guard(const engine& e)
    : starts_(e.secret_starts()),
      reach_(std::max<std::size_t>(starts_.longest(), 1)),
      origin_(reach_, 0) {}

bool escape_guard::read(unsigned char c, std::uint64_t from) {
  origin_[decoded_ % reach_] = from;
  ++decoded_;
  if (!starts_.advance(st_, c)) return true;
  why_ = "a secret in the body behind JSON escapes or HTML character references";
  return false;
}

bool escape_guard::read_code_point(char32_t cp, std::uint64_t from) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) cp = 0xFFFD;
  utf8_.clear();
  core::append_utf8(utf8_, cp);
  for (unsigned char c : utf8_)
    if (!read(c, from)) return false;
  return true;
}

bool escape_guard::take(unsigned char c, std::uint64_t at) {
  switch (mode_) {
    case mode::text:
      if (c == '\\' || c == '&' || c == '%') {
        mode_ = c == '\\' ? mode::backslash : c == '&' ? mode::amp : mode::percent;
        escape_at_ = at;
        digits_ = 0;
        value_ = 0;
        return true;
      }
      if (high_ != 0) {  // a high surrogate with no low one after it
        high_ = 0;
        if (!read_code_point(0xFFFD, escape_at_)) return false;
      }
      return read(c, at);
    case mode::backslash:
      mode_ = mode::text;
      if (c == 'u') {
        mode_ = mode::json_hex;
        value_ = 0;
        digits_ = 0;
        return true;
      }
      if (const int e = json_escape(c); e >= 0) return read(static_cast<unsigned char>(e), at);
      return read('\\', escape_at_) && take(c, at);  // not an escape: as written
    case mode::json_hex: {
      const int v = hex_value(c);
      if (v < 0) {  // a parser refuses it: what follows is read as written
        mode_ = mode::text;
        return take(c, at);
      }
      value_ = value_ * 16 + static_cast<std::uint32_t>(v);
      if (++digits_ < 4) return true;
      mode_ = mode::text;
      const char32_t cp = value_;
      if (cp >= 0xD800 && cp < 0xDC00) {  // its low half follows as another \u escape
        high_ = cp;
        return true;
      }
      if (cp >= 0xDC00 && cp < 0xE000 && high_ != 0) {
        const char32_t whole = 0x10000 + ((high_ - 0xD800) << 10) + (cp - 0xDC00);
        high_ = 0;
        return read_code_point(whole, escape_at_);
      }
      return read_code_point(cp, escape_at_);
    }
    case mode::percent: {  // RFC 3986 section 2.1, as a URL decoder reads it
      const int v = hex_value(c);
      if (v < 0) {
        mode_ = mode::text;
        if (!read('%', escape_at_)) return false;
        if (digits_ == 1 && !read(static_cast<unsigned char>(pct_first_), escape_at_)) return false;
        return take(c, at);
      }
      if (digits_++ == 0) {
        pct_first_ = static_cast<char>(c);
        value_ = static_cast<std::uint32_t>(v);
        return true;
      }
      mode_ = mode::text;
      return read(static_cast<unsigned char>(value_ * 16 + static_cast<std::uint32_t>(v)),
                  escape_at_);
    }
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
      return read('&', escape_at_) && take(c, at);
    case mode::amp_name:
      return take_name(c, at);
    case mode::amp_hash:
      mode_ = mode::amp_digits;
      value_ = 0;
      digits_ = 0;
      hex_ = c == 'x' || c == 'X';
      if (hex_) return true;
      return take(c, at);
    case mode::amp_digits: {
      // (Leading zeros included, as a browser reads them: "&#0000115;" is "s".)
      const int v = hex_ ? hex_value(c) : (c >= '0' && c <= '9' ? c - '0' : -1);
      if (v >= 0) {
        value_ = numeric_reference_digit(value_, v, hex_);
        if (static_cast<std::size_t>(++digits_) <= kMaxReferenceDigits) return true;
        why_ = "a character reference of more digits than the guard reads";
        return false;
      }
      mode_ = mode::text;
      if (digits_ == 0) {  // "&#" or "&#x" and no digit: as written
        if (!read('&', escape_at_) || !read('#', escape_at_)) return false;
        if (hex_ && !read('x', escape_at_)) return false;
        return take(c, at);
      }
      if (!read_code_point(numeric_reference_value(value_), escape_at_)) return false;
      return c == ';' || take(c, at);
    }
  }
  return true;
}

bool escape_guard::take_name(unsigned char c, std::uint64_t at) {
  if (core::is_alnum(static_cast<char>(c)) && name_.size() < kMaxReferenceName) {
    name_.push_back(static_cast<char>(c));
    return true;
  }
  mode_ = mode::text;
  const int named = named_reference(name_);
  if (c == ';' && named >= 0) return read(static_cast<unsigned char>(named), escape_at_);
  // Else the longest legacy name at its front ("&ampx" is "&" then "x"), or none: as written.
  const std::size_t legacy = legacy_reference_prefix(name_);
  if (legacy > 0) {
    if (!read(static_cast<unsigned char>(named_reference(name_.substr(0, legacy))), escape_at_))
      return false;
  } else if (!read('&', escape_at_)) {
    return false;
  }
  for (const char n : std::string_view(name_).substr(legacy))
    if (!read(static_cast<unsigned char>(n), escape_at_)) return false;
  return take(c, at);
}

bool escape_guard::skim(std::string_view text, std::uint64_t at) {
  // From the start (state 0), only the last `reach_` bytes can hold a spelling's start.
  const std::size_t skip = text.size() > reach_ ? text.size() - reach_ : 0;
  for (std::size_t i = skip; i < text.size(); ++i)
    if (!read(static_cast<unsigned char>(text[i]), at + i)) return false;
  return true;
}

std::uint64_t escape_guard::hold_from() const noexcept {
  std::uint64_t from = pending_at_ + pending_.size();
  if (mode_ != mode::text || high_ != 0) from = std::min(from, escape_at_);
  if (const std::size_t d = starts_.depth(st_); d > 0)
    from = std::min(from, origin_[(decoded_ - d) % reach_]);
  return from;
}

bool escape_guard::write(std::string_view redacted, std::string& out) {
  if (why_) return false;
  if (starts_.empty()) {  // no literal secret: nothing to look for
    out.append(redacted);
    return true;
  }
  pending_.append(redacted);
  const std::uint64_t end = pending_at_ + pending_.size();
  std::uint64_t pos = std::max(scanned_, pending_at_);
  while (pos < end) {
    const std::string_view rest = std::string_view(pending_).substr(pos - pending_at_);
    if (mode_ == mode::text && high_ == 0 && starts_.depth(st_) == 0) {
      // Nothing pending: on to the next escape, reading only where a spelling could start.
      const char* next = rest.data() + rest.size();
      for (const char e : {'\\', '&', '%'})
        if (const void* hit = std::memchr(rest.data(), e, rest.size()))
          next = std::min(next, static_cast<const char*>(hit));
      const std::size_t n = static_cast<std::size_t>(next - rest.data());
      st_ = 0;
      if (!skim(rest.substr(0, n), pos)) return false;
      pos += n;
      if (n == rest.size()) break;
    }
    if (!take(static_cast<unsigned char>(pending_[pos - pending_at_]), pos)) return false;
    ++pos;
  }
  scanned_ = end;
  const std::uint64_t keep = hold_from();
  out.append(pending_, 0, keep - pending_at_);
  pending_.erase(0, keep - pending_at_);
  pending_at_ = keep;
  return true;
}

void escape_guard::finish(std::string& out) {
  if (why_) return;
  out.append(pending_);
  pending_at_ += pending_.size();
  pending_.clear();
}

}  // namespace airlock::filters::redaction
