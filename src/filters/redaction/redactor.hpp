#pragma once
// What a redactor is: a name, an RE2 pattern, an optional validator and a replacement. Built-in
// redactors (builtin.hpp), custom ones from the policy and literal secrets all end up as these
// before engine::build compiles them.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {

// How far a validator may look around its candidate. The stream keeps this much context on
// either side, so a validator sees the same bytes however the body was split into chunks.
inline constexpr std::size_t kLookBehind = 8;
inline constexpr std::size_t kLookAhead = 8;

// A match proposed to a validator: span [begin, end) inside `text`. `text` also holds up to
// kLookBehind bytes before the span and up to kLookAhead bytes after it; it holds fewer only
// where the text (the body, or one event in event mode) starts or ends there.
struct candidate {
  std::string_view text;
  std::size_t begin = 0;
  std::size_t end = 0;

  std::string_view span() const noexcept { return text.substr(begin, end - begin); }
  // The k-th byte before the span (k >= 1), or -1 past the start of the text.
  int before(std::size_t k = 1) const noexcept {
    return begin >= k ? static_cast<unsigned char>(text[begin - k]) : -1;
  }
  // The k-th byte after the span (k = 0 is the first one), or -1 past the end of the text.
  int after(std::size_t k = 0) const noexcept {
    return end + k < text.size() ? static_cast<unsigned char>(text[end + k]) : -1;
  }
};

// A validator's answer: accept a span inside the candidate (the candidate itself, or a part of
// it: a trimmed trailing dot, the card number inside a longer digit run), or reject it and say
// where the search should resume (offset in candidate::text, 0 = one byte after the match start).
struct verdict {
  bool accepted = false;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t resume = 0;

  static verdict accept(std::size_t b, std::size_t e) noexcept { return {true, b, e, 0}; }
  static verdict accept(const candidate& c) noexcept { return {true, c.begin, c.end, 0}; }
  static verdict reject(std::size_t resume_at = 0) noexcept { return {false, 0, 0, resume_at}; }
};

// Validators must be pure functions of the candidate (no state, no allocation on the hot path):
// the stream's output must not depend on how the body was chunked.
using validator_fn = verdict (*)(const candidate&);

// A claim about a pattern that lets the engine skip text cheaply instead of running RE2 over
// every byte (see prefilter.hpp): every match satisfies at least one of the conditions listed.
// A wrong claim means missed matches, so the built-ins carry hints checked by tests and policy
// patterns carry none.
struct literal_hint {
  std::string text{};          // the match contains this literal
  bool icase = false;          // (ASCII case-insensitively)
  std::size_t max_before = 0;  // starting at most this many bytes after the match starts
};
struct prefilter_hint {
  std::vector<literal_hint> literals{};
  // The match lies in a run of 13 or more digits with at most one ' ' or '-' between two.
  bool card_digits = false;
  // The match holds a ' ', '.' or '-' followed by 4 digits, at most 12 bytes after its start.
  bool phone_digits = false;
  // The match starts with two capital letters followed by two digits (an IBAN's country code
  // and check digits, ISO 13616).
  bool caps_digits = false;
  // A match its validator accepts is a whole token of base58 bytes ([1-9A-HJ-NP-Za-km-z], the
  // alphabet of Bitcoin addresses and WIF keys) base58_min..base58_max long: it lies in a run
  // of base58 bytes, ends where the run ends, with no letter, digit or '_' after it, and starts
  // at most 5 bytes into the run (after a JSON escape such as \n or \u0041; see
  // validators::token_starts_at). The only hint that leans on the validator: a match it would
  // reject need not be found, so such a pattern is searched anchored where a token may start
  // (stream.cpp). 0: no such claim.
  std::size_t base58_min = 0;
  std::size_t base58_max = 0;
  // Served after every other hint, on the anchor bytes those left or chose (else by the
  // RE2::Set): a secret's many base64 spellings must not take the 16 anchors from the
  // built-in patterns, which come later in the pattern order.
  bool late = false;
  bool empty() const noexcept {
    return literals.empty() && !card_digits && !phone_digits && !caps_digits && base58_min == 0;
  }
};

// One redactor. The pattern is RE2 syntax matched on bytes (Latin-1: `.` is one byte, UTF-8 in
// a pattern matches the same bytes in the body). If the pattern has a capturing group, only
// group 1 is replaced (the rest is context, e.g. the `"SecretAccessKey": "` label); otherwise
// the whole match.
struct redactor_spec {
  std::string name{};
  std::string pattern{};
  std::string replacement{};  // empty: "[REDACTED:<name>]"
  validator_fn validator = nullptr;
  // A proven upper bound on the match length (0: unknown). Patterns without one are matched
  // within a window of at least the engine's overlap (see engine.hpp).
  std::size_t max_length = 0;
  prefilter_hint hint{};
};

// A policy's own redactor: no validator, no proven bound (matched within the overlap window),
// no prefilter hint (found through the RE2::Set). Empty replacement: "[REDACTED:<name>]".
inline redactor_spec custom_redactor(std::string name, std::string pattern,
                                     std::string replacement = {}) {
  redactor_spec spec;
  spec.name = std::move(name);
  spec.pattern = std::move(pattern);
  spec.replacement = std::move(replacement);
  return spec;
}

// An exact secret value (e.g. an injected API key). Always redacted as
// "[REDACTED:secret:<name>]"; the value never appears in an error, a name or a count.
struct literal_secret {
  std::string name;
  std::string value;
};

}  // namespace airlock::filters::redaction
