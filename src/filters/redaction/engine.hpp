#pragma once
// The compiled redaction engine: redactors (built-in, custom) and literal secrets. One pass over
// the text finds where each may match: the prefilter (prefilter.hpp: an SSE2 search for the
// literals and digit runs the built-ins' hints name, and for literal secrets) for hinted
// patterns, one RE2::Set for the others (policy patterns). Then each pattern's own RE2 runs
// only inside the prefilter's windows, or where the set says it hit, to find exact spans.
//
// What is redacted (the same whether the text is redacted at once or streamed in chunks):
// each redactor finds its own leftmost, non-overlapping matches (RE2 leftmost-first), kept by
// its validator; where spans of different redactors overlap, their union is replaced once, by
// the replacement of the span that starts first (on a tie: the longer one; then secrets before
// redactors, redactors in list order). So a secret that overlaps an e-mail match is still
// removed whole. Hits are counted per redactor (every accepted span counts).
//
// The overlap (engine_options::overlap, grown to fit the longest literal secret) bounds what a
// stream holds back (at most 1.5 x overlap plus a few bytes, plus what waits for a scan).
// Patterns with a proven max_length <= overlap (the built-ins but jwt and pem-private-key;
// literal secrets) always find their whole match. The others are matched
// within a window: a match may run at least `overlap` bytes from where it starts (up to 1.5x,
// depending on where it starts on a fixed grid) and is cut there. So a PEM block longer than
// the overlap is redacted only up to there: raise the overlap if keys that long are expected.
//
// @par Thread Safety
// An engine is immutable after build() and may be shared by any number of threads and
// streams (RE2 objects are thread-safe for matching).

#include "filters/redaction/redactor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {

class secret_automaton;

struct engine_options {
  // Matches up to this long are found whole across chunk boundaries (see above). Raised to at
  // least 256, and to the longest spelling of a literal secret.
  std::size_t overlap = 8 * 1024;
  // Longest literal secret accepted (its encoded spellings may be longer).
  std::size_t max_secret_length = 16 * 1024;
  // Also redact the JSON-escaped and percent-encoded spellings of literal secrets.
  bool secret_spellings = true;
  // Memory budget of the RE2::Set (its DFA cache); the individual patterns keep RE2's default.
  std::int64_t set_max_mem = 64 << 20;
  // Find hinted patterns and literal secrets through the prefilter (prefilter.hpp) rather than
  // the RE2::Set. The result is the same either way; off only to compare the two.
  bool prefilter = true;
};

// Hit counts, indexed like engine::label_name().
using hit_counts = std::vector<std::uint64_t>;

class engine;

struct build_result {
  std::shared_ptr<const engine> compiled;  // null when errors is not empty
  std::vector<std::string> errors;         // name redactors and secrets, never secret values
};

class engine {
 public:
  // Secrets come first in the tie-break order, then `redactors` in order. Errors: an empty or
  // invalid name, a pattern RE2 rejects or that matches the empty string, an empty or too long
  // secret, a set too large to compile.
  static build_result build(std::vector<redactor_spec> redactors,
                            std::vector<literal_secret> secrets, const engine_options& opts = {});

  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  // The names hits are counted under: a redactor's name, or "secret:<name>".
  std::size_t label_count() const noexcept;
  std::string_view label_name(std::size_t i) const noexcept;
  // The non-zero counts, by name (for the audit record and metrics).
  std::vector<std::pair<std::string_view, std::uint64_t>> named(const hit_counts& h) const;

  std::size_t overlap() const noexcept;
  std::size_t pattern_count() const noexcept;

  // False only when no redactor can match anywhere in `text`: neither the prefilter nor the
  // RE2::Set finds a candidate (the same two passes a stream starts from, so never a false
  // "no"). A cheap first look for the many short texts where nothing is (header values).
  bool may_match(std::string_view text) const;
  // Whether may_match on texts joined with line feeds between them answers for each text: a
  // match inside one text is a match in the whole, and a line feed is a word boundary as the
  // end of a text is. Not so when a pattern is anchored (`^`, `$`, `\A`, `\z` outside a
  // character class): the join would move where the anchor holds.
  bool joinable() const noexcept;

  // The literal secrets' spellings as one automaton: where a text ends with the start of one,
  // and whether one ends in it (event_guard.hpp). Empty when the engine has no secret.
  const secret_automaton& secret_starts() const noexcept;
  // One-shot redaction of a complete text (header values, tests). Adds to *hits if given
  // (resized to label_count()).
  std::string redact(std::string_view text, hit_counts* hits = nullptr) const;

  struct impl;
  const impl& internals() const noexcept { return *impl_; }

 private:
  explicit engine(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

// A response header value, redacted in one shot (a value is complete and small). Same as
// e.redact(value, hits).
std::string redact_header_value(const engine& e, std::string_view value,
                                hit_counts* hits = nullptr);

// Every value of a response head at once: the same result as redact_header_value on each, for
// the cost of one stream (each value is a line, redacted as a text of its own), instead of one
// per value. Values must not contain a line feed (header field values cannot).
std::vector<std::string> redact_header_values(const engine& e,
                                              const std::vector<std::string_view>& values,
                                              hit_counts* hits = nullptr);

}  // namespace airlock::filters::redaction
