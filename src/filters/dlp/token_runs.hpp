#pragma once
// Private to the DLP scanner: how it cuts text into the tokens it decodes, and joins the runs of
// tokens that decode only together.
//
// A token is a stretch of the bytes base64, base32 and hex use ('A'-'Z', 'a'-'z', '0'-'9', '+',
// '/', '_', '-', ':'), with any '=' padding after it. A run is tokens one gap apart that only
// decode joined: hex written in pairs or groups with spaces ("41 4b 49", xxd's "414b 4941") or
// in lines (`xxd -p`), and base64 wrapped at a fixed width (`base64` at 76 columns, PEM at 64,
// MIME with CRLF). Each line or group alone decodes to a piece of what was encoded, so a secret
// across a gap is seen only joined. A gap is one space (hex only) or one line break, also as
// JSON writes one inside a string ("\n", "\r\n" with backslashes), with the indentation of
// the line after it (up to core::kMaxWrapIndent spaces or tabs: a PEM in a YAML block scalar).
//
// @par Thread Safety
// One run_joiner per reading of a text, one thread.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace airlock::filters::dlp::detail {

inline constexpr std::size_t kMinToken = 16;  // shorter tokens and runs are not worth decoding
inline constexpr std::size_t kMaxToken = 64 * 1024;

// The line break at `i`: "\n", "\r\n", or JSON's escaped "\\n" or "\\r\\n", and the
// indentation after it: its length, or 0.
std::size_t line_break(std::string_view text, std::size_t i) noexcept;

// One token of `text`, found by next_token().
struct token_span {
  std::size_t begin = 0;
  std::size_t end = 0;     // the token's own bytes end here
  std::size_t padded = 0;  // and its '=' padding here
  bool hex = false;        // every byte a hex digit
  bool base64 = false;     // every byte in base64's or base64url's alphabet
};

// The next token at or after `from`, or false at the end of `text`. A JSON escape ("\n", "\t",
// "\r", "\b", "\f") between tokens is skipped whole: its letter starts no token.
bool next_token(std::string_view text, std::size_t from, token_span& t) noexcept;

// Joins the runs of one kind among the tokens it is offered in order, and hands each run that
// has two tokens or more and kMinToken bytes or more to a callback, its gaps left out. A run
// longer than kMaxToken is handed on in pieces, each starting with the last token of the one
// before (a secret across a cut is seen whole in one of them).
class run_joiner {
 public:
  enum class kind {
    hex,           // even-length hex tokens, a space or a line break apart
    base64_lines,  // base64 lines of one width (a multiple of 4, kMinToken or more), a line
                   // break apart, then at most one shorter or padded last line
  };
  explicit run_joiner(kind k) noexcept : kind_(k) {}

  // Takes the next token `t` of `text`; calls `f(const std::string& joined)` with the run that
  // `t` ends, or that ended before it.
  template <class F>
  void offer(std::string_view text, const token_span& t, F&& f);
  // The end of the text: `f` with the run still open, if any.
  template <class F>
  void finish(F&& f) {
    if (tokens_ >= 2 && joined_.size() >= kMinToken) f(std::as_const(joined_));
    reset();
  }

 private:
  void reset() noexcept {
    joined_.clear();
    tokens_ = 0;
    first_ = false;
  }
  // The token is in the run's alphabet (hex: whole pairs, no padding).
  bool alphabet(const token_span& t, std::size_t len) const noexcept {
    return kind_ == kind::hex ? t.hex && len % 2 == 0 && t.padded == t.end : t.base64;
  }
  // It can follow the run's tokens (base64: no longer than the lines before it).
  bool continues(const token_span& t, std::size_t len) const noexcept {
    return alphabet(t, len) && (kind_ == kind::hex || len <= width_);
  }

  kind kind_;
  std::string joined_;
  std::size_t tokens_ = 0;
  std::size_t width_ = 0;     // base64: the run's line width
  std::size_t last_len_ = 0;  // the last token's length (kept across a cut)
  std::size_t next_ = 0;      // where the next token must begin to continue the run
  bool first_ = false;        // the first token of the run was held back, not yet appended
  std::size_t first_begin_ = 0;
};

template <class F>
void run_joiner::offer(std::string_view text, const token_span& t, F&& f) {
  const std::size_t len = t.padded - t.begin;
  if (tokens_ > 0 && (t.begin != next_ || !continues(t, len))) finish(f);
  if (!alphabet(t, len)) return;
  if (tokens_ == 0) {
    if (kind_ == kind::base64_lines) {
      if (len % 4 != 0 || len < kMinToken || t.padded != t.end) return;
      width_ = len;
    }
    // Held back: most tokens start no run, and copying each would cost more than the rest.
    first_begin_ = t.begin;
    first_ = true;
  } else {
    if (first_) {
      joined_.assign(text.substr(first_begin_, last_len_));
      first_ = false;
    }
    if (joined_.size() + len > kMaxToken && tokens_ >= 2) {
      f(joined_);
      joined_.erase(0, joined_.size() - last_len_);
      tokens_ = 1;
    }
    joined_.append(text.substr(t.begin, len));
  }
  last_len_ = len;
  ++tokens_;
  const bool last_line = kind_ == kind::base64_lines && (len < width_ || t.padded != t.end);
  std::size_t gap = line_break(text, t.padded);
  if (gap == 0 && kind_ == kind::hex && t.padded < text.size() && text[t.padded] == ' ') gap = 1;
  if (last_line || gap == 0) {
    finish(f);
    return;
  }
  next_ = t.padded + gap;
}

}  // namespace airlock::filters::dlp::detail
