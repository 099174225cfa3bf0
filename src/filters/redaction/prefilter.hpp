#pragma once
// Internal: the cheap first pass in front of RE2. RE2's DFA costs a few cycles per byte for
// every byte it reads; most of a response holds nothing to redact. The prefilter reads the text
// once with SSE2 (16 bytes per compare) looking only for what the patterns' hints name
// (redactor.hpp): a few anchor bytes of the hint literals, verified in place, runs of
// digits for cards and phone numbers, two capitals and two digits for IBANs, and long base58
// runs for Bitcoin addresses and keys. For each hit it yields a window that holds every match
// containing that hit, and the stream runs RE2 inside the windows only. The windows are a
// superset of where matches can be, so the result is exactly what RE2 over every byte gives
// (the tests compare both).
//
// @par Thread Safety
// Immutable after construction; scan() may run on many threads at once.

#include "filters/redaction/redactor.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {

// [begin, end) in absolute stream offsets. For a windowed pattern only `begin` matters: it is
// where a match may start.
struct window {
  std::size_t begin = 0;
  std::size_t end = 0;
};

class prefilter {
 public:
  struct pattern {
    const prefilter_hint* hint = nullptr;  // null or empty: not served
    std::size_t max_length = 0;            // 0: windowed (hits then mark match starts)
  };

  // Patterns whose hints cannot be served (no hint, a windowed pattern whose literal may start
  // past its match start, more distinct anchor bytes than one pass compares) report
  // serves(i) == false and must be found another way (the RE2::Set).
  explicit prefilter(const std::vector<pattern>& patterns);

  bool serves(std::size_t i) const noexcept { return i < served_.size() && served_[i]; }
  bool empty() const noexcept {
    return lits_.empty() && card_.empty() && phone_.empty() && caps_.empty() && base58_.empty();
  }

  // Scans text (whose first byte is at absolute offset `base`) and appends to out[i] the
  // windows of pattern i's hits, for each served pattern. Windows of one pattern come out in
  // order of their hit, not sorted by begin.
  void scan(std::string_view text, std::size_t base, std::vector<std::vector<window>>& out) const;

 private:
  struct literal {
    std::uint32_t pattern;
    std::string text;
    bool icase;
    std::size_t anchor;  // offset of the anchor byte in text
    std::size_t before;  // window starts this far before the literal
    std::size_t length;  // window ends this far after the literal's start
    std::uint32_t head;  // first 4 bytes (zero-padded), case bits cleared if icase
    std::uint32_t head_mask;
  };

  void serve(const std::vector<pattern>& patterns, bool late);
  bool add_literal(std::uint32_t pattern, const literal_hint& h, std::size_t max_length);
  // Follows the runs of base58 bytes through the 64-bit mask `r` of the bytes at absolute
  // offset `at` (a run still open from the previous 64 in `open`, `begin`) and calls
  // emit(begin, end) for each run that ends here.
  template <class Emit>
  void base58_runs(std::uint64_t r, std::size_t at, bool& open, std::size_t& begin,
                   Emit&& emit) const;

  std::vector<literal> lits_;
  std::array<std::vector<std::uint32_t>, 256> by_anchor_{};  // anchor byte -> lits_ indices
  // For each anchor byte, the bytes that may follow it in one of its literals (a bit per byte;
  // all set where the anchor ends a literal): one lookup rejects most hits.
  std::array<std::array<std::uint64_t, 4>, 256> follow_{};
  std::vector<unsigned char> anchors_;  // distinct anchor bytes
  std::vector<std::uint32_t> card_;     // patterns hinted card_digits
  std::vector<std::uint32_t> phone_;    // patterns hinted phone_digits
  // Patterns hinted caps_digits, with the length of their window from the hit.
  std::vector<std::pair<std::uint32_t, std::size_t>> caps_;
  // Patterns hinted base58_min, with the lengths of their tokens; base58_min_ is the least.
  struct base58_pattern {
    std::uint32_t pattern;
    std::size_t least;
    std::size_t most;
  };
  std::vector<base58_pattern> base58_;
  std::size_t base58_min_ = 0;
  std::vector<bool> served_;
};

}  // namespace airlock::filters::redaction
