#pragma once
// Internal: where a token of [A-Za-z0-9_] may start, for the patterns whose validators accept
// whole tokens only (prefilter_hint::base58_min). Shared by the prefilter (which finds the
// runs) and the stream (which searches them anchored at those starts).

#include <re2/re2.h>

#include <cstddef>
#include <string_view>

namespace airlock::filters::redaction {

inline bool is_token_byte(unsigned char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

// Whether a token may start at text[i]: after a byte that is no token byte, or within six bytes
// of a backslash (a JSON escape such as \n or \u0041 before it; a superset of
// validators::token_starts_at).
bool may_start_token(std::string_view text, std::size_t i) noexcept;

// The first match of `re` in text[from, to) that starts where a token may, searched anchored at
// each such start. A pattern with counted repetitions searched unanchored over a run of its own
// alphabet keeps one DFA thread per possible start and thrashes RE2's DFA cache (7 us for a
// 40-byte run against 0.06 us anchored); the base58 patterns' validators accept only whole
// tokens anyway, so nothing else could be accepted.
bool match_at_token_starts(const RE2& re, std::string_view text, std::size_t from, std::size_t to,
                           re2::StringPiece* sub, int nsub);

}  // namespace airlock::filters::redaction
