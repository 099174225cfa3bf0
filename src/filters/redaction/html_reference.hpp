#pragma once
// HTML character references as a browser's tokenizer reads them in text (WHATWG HTML
// 13.2.5.72-80), for the guards that read a body through them (escape_guard.hpp,
// field_escapes.hpp): numeric references take any number of leading zeros ("&#0000115;" is
// "s") and a value past U+10FFFF, a surrogate or zero reads as U+FFFD; named references are
// looked up only among those that stand for an ASCII character ("&sol;" is "/", "&plus;" "+",
// "&lowbar;" "_", "&fjlig;" "fj"): a secret's value is ASCII, and every spelling of its characters
// counts.
//
// @par Thread Safety
// Pure functions.

#include <cstddef>
#include <string_view>

namespace airlock::filters::redaction {

// The longest name of a named reference that stands for an ASCII character
// ("DiacriticalGrave").
inline constexpr std::size_t kMaxReferenceName = 16;
// Numeric reference digits, leading zeros included, that a guard reads before it gives up
// (and cuts the body): no real text escapes a character with more.
inline constexpr std::size_t kMaxReferenceDigits = 1024;

// The ASCII text `name` stands for when written "&name;" (one character, or "fj" for
// "&fjlig;"), or "" when none.
std::string_view named_reference(std::string_view name) noexcept;
// Whether "&name" also stands for it without the ';' (the legacy names of the WHATWG table,
// of which these four stand for ASCII characters: amp, lt, gt, quot, in either case).
bool named_reference_without_semicolon(std::string_view name) noexcept;
// The length of the legacy name `name` starts with, or 0: a browser reads the longest name it
// knows at the front of the letters after "&" (13.2.5.73), so "&ampx" is "&" then "x".
std::size_t legacy_reference_prefix(std::string_view name) noexcept;
// What "&" and `name` (letters and digits) read as, the character after the name being ';'
// or not: the text, how many of the name's characters it takes (0: none, the '&' is as
// written), and whether it takes the ';' too. A whole name with its ';', else the longest
// legacy name at its front ("&ampx" is "&" then "x"; "&sol" without ';' is as written).
struct named_read {
  std::string_view text;
  std::size_t used = 0;
  bool semicolon = false;
};
named_read read_named_reference(std::string_view name, bool semicolon_follows) noexcept;

// JSON's (and JavaScript's) one-letter escapes: what "\" and `c` read as, or -1.
int one_letter_escape(unsigned char c) noexcept;

// A numeric reference's value as a browser reads it (U+FFFD for zero, a surrogate or past
// U+10FFFF).
char32_t numeric_reference_value(char32_t value) noexcept;
// A numeric reference's digit's value (decimal, or hex after "&#x"), or -1.
int reference_digit(char c, bool hex) noexcept;
// The value so far and the next digit, saturating past U+10FFFF (any more digits keep it so).
char32_t numeric_reference_digit(char32_t value, int digit, bool hex) noexcept;

}  // namespace airlock::filters::redaction
