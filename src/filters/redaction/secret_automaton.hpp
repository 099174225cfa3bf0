#pragma once
// The spellings of an engine's literal secrets as one Aho-Corasick automaton (A. V. Aho and
// M. J. Corasick, "Efficient string matching", CACM 18(6), 1975), read a byte at a time. After
// any text its state says how long the longest end of the text is that starts a spelling, and
// feed() says whether a spelling ended inside what it read. The event guard keeps one state per
// JSON field of a stream, so a secret streamed across events is seen without keeping or
// re-reading the text (event_guard.hpp).
//
// @par Thread Safety
// Immutable once built; states are the caller's.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::redaction {

class secret_automaton {
 public:
  using state = std::uint32_t;  // 0: nothing read, or nothing that starts a spelling

  explicit secret_automaton(const std::vector<std::string_view>& spellings);

  bool empty() const noexcept { return nodes_.size() <= 1; }
  // Reads `text` on from `s`; true when a whole spelling ended in it.
  bool feed(state& s, std::string_view text) const;
  // Reads one byte on from `s`; true when a whole spelling ended with it.
  bool advance(state& s, unsigned char c) const noexcept {
    s = step(s, c);
    return nodes_[s].ends;
  }
  // The longest spelling.
  std::size_t longest() const noexcept { return longest_; }
  // How many bytes at the end of what was read start a spelling (the longest such).
  std::size_t depth(state s) const noexcept { return nodes_[s].depth; }
  // The length of the shortest spelling those bytes start (0 at state 0).
  std::size_t shortest(state s) const noexcept { return nodes_[s].shortest; }

 private:
  struct node {
    state fail = 0;
    std::uint32_t depth = 0;
    std::uint32_t shortest = 0;  // the shortest spelling through here
    bool ends = false;           // a spelling ends here (or at a node its failure links reach)
    std::vector<std::pair<unsigned char, state>> next;
  };
  state edge(state s, unsigned char c) const noexcept;  // 0 when none (and s is not the root)
  state step(state s, unsigned char c) const noexcept;

  std::vector<node> nodes_;
  std::vector<state> root_next_;  // the root's edges, by byte (0: none)
  std::size_t longest_ = 0;
};

}  // namespace airlock::filters::redaction
