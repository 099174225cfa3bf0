#pragma once
// One layer of the escape guard (escape_guard.hpp): a decoder of JSON and JavaScript escapes,
// HTML character references and percent-encoding, byte by byte, and the reading of what it
// decodes through the secrets' spellings. The guard stacks two: the second reads what the
// first decodes, so a value escaped twice over (Go's JSON writes '&' as \u0026, so HTML inside
// JSON reads "\u0026#115;"; a URL inside a URL "%2573"; JSON inside a JSON string "\\u0073")
// is read as the client that decodes both layers reads it. A line break that wraps encoded
// text (base64 as MIME and PEM write it, hex as xxd -p does), with the next line's indentation,
// is read as nothing, as the decoder of that text reads it, so a spelling the wrap cuts in two
// is read whole.
//
// @par Thread Safety
// Owned by one guard.

#include "filters/redaction/secret_automaton.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace airlock::filters::redaction {

class escape_layer {
 public:
  escape_layer(const secret_automaton& starts, std::size_t reach)
      : starts_(starts), reach_(reach), origin_(reach, 0) {}

  // One byte (that began at raw offset `at`) through the decoder; what it decodes is read here
  // and handed to `next`, if any. False when a spelling ended (a secret).
  bool take(unsigned char c, std::uint64_t at, escape_layer* next);
  // One byte read as text (no escape can start at it: the guard's skim), from the start of the
  // spellings; handed on to `next` the same way.
  bool read_plain(unsigned char c, std::uint64_t at, escape_layer* next);
  // Nothing pending: no escape under way, and the text read so far starts no spelling.
  bool idle() const noexcept {
    return mode_ == mode::text && high_ == 0 && starts_.depth(st_) == 0;
  }
  // Forget the reading (the guard skims from the start of the spellings).
  void restart() noexcept { st_ = 0; }
  // The raw offset from which this layer needs the text held back, or `end` if none.
  std::uint64_t hold_from(std::uint64_t end) const noexcept;
  // A numeric reference of more digits than kMaxReferenceDigits was cut (not a secret).
  bool too_long() const noexcept { return too_long_; }

 private:
  enum class mode : std::uint8_t {
    text,
    backslash,
    json_hex,
    js_hex,
    js_braces,
    amp,
    amp_name,
    amp_hash,
    amp_digits,
    percent
  };

  bool read(unsigned char c, std::uint64_t from, escape_layer* next);
  // Whether decoded byte `c` wraps encoded text (a line break inside it, or the indentation
  // after one), read as nothing as a decoder skips it; notes it when it does.
  bool skips_wrap(unsigned char c) noexcept;
  // A pending high surrogate read as U+FFFD (none: nothing).
  bool flush_high(std::uint64_t from, escape_layer* next);
  bool read_code_point(char32_t cp, std::uint64_t from, escape_layer* next);
  // A code point from a JSON or JavaScript escape (0 is a NUL there).
  bool read_escaped(char32_t cp, std::uint64_t from, escape_layer* next);
  bool take_backslash(unsigned char c, std::uint64_t at, escape_layer* next);
  bool take_hex(unsigned char c, std::uint64_t at, escape_layer* next);
  bool take_name(unsigned char c, std::uint64_t at, escape_layer* next);
  bool take_digits(unsigned char c, std::uint64_t at, escape_layer* next);
  bool take_percent(unsigned char c, std::uint64_t at, escape_layer* next);

  const secret_automaton& starts_;
  std::size_t reach_;  // the longest spelling
  secret_automaton::state st_ = 0;
  std::vector<std::uint64_t> origin_;  // raw offset each of the last reach_ decoded bytes began at
  std::uint64_t decoded_ = 0;          // decoded bytes read
  mode mode_ = mode::text;
  std::uint64_t escape_at_ = 0;  // raw offset of the escape being read
  std::uint32_t value_ = 0;      // its digits so far
  std::size_t digits_ = 0;
  bool hex_ = false;
  char pct_first_ = 0;            // a percent escape's first digit
  char32_t high_ = 0;             // a JSON high surrogate waiting for its low half
  unsigned char last_ = 0;        // the last decoded byte read
  unsigned char line_break_ = 0;  // the break skipped since last_ ('\r', '\n'; 0: none)
  std::size_t indent_ = 0;        // the blanks skipped after it
  std::string utf8_;              // a decoded code point's bytes (kept: no allocation per escape)
  std::string name_;              // a named reference's name so far
  bool too_long_ = false;
};

}  // namespace airlock::filters::redaction
