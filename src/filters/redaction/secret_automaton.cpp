// The secrets' spellings as one Aho-Corasick automaton (secret_automaton.hpp).
#include "filters/redaction/secret_automaton.hpp"

#include <algorithm>
#include <deque>

namespace airlock::filters::redaction {

secret_automaton::secret_automaton(const std::vector<std::string_view>& spellings)
    : nodes_(1), root_next_(256, 0) {
  // The trie of the spellings.
  for (std::string_view s : spellings) {
    if (s.empty()) continue;
    longest_ = std::max(longest_, s.size());
    state at = 0;
    for (unsigned char c : s) {
      state to = at == 0 ? root_next_[c] : edge(at, c);
      if (to == 0) {
        to = static_cast<state>(nodes_.size());
        const auto length = static_cast<std::uint32_t>(s.size());
        nodes_.push_back({0, nodes_[at].depth + 1, length, false, {}});
        if (at == 0)
          root_next_[c] = to;
        else
          nodes_[at].next.emplace_back(c, to);
      }
      at = to;
      nodes_[at].shortest = std::min(nodes_[at].shortest, static_cast<std::uint32_t>(s.size()));
    }
    nodes_[at].ends = true;
  }
  // Failure links, breadth first: a node's is where the longest proper suffix of its string
  // that is also a prefix in the trie leads.
  std::deque<state> queue;
  for (unsigned c = 0; c < 256; ++c)
    if (root_next_[c] != 0) queue.push_back(root_next_[c]);
  while (!queue.empty()) {
    const state at = queue.front();
    queue.pop_front();
    for (const auto& [c, to] : nodes_[at].next) {
      nodes_[to].fail = step(nodes_[at].fail, c);
      nodes_[to].ends = nodes_[to].ends || nodes_[nodes_[to].fail].ends;
      queue.push_back(to);
    }
  }
}

secret_automaton::state secret_automaton::edge(state s, unsigned char c) const noexcept {
  for (const auto& [byte, to] : nodes_[s].next)
    if (byte == c) return to;
  return 0;
}

secret_automaton::state secret_automaton::step(state s, unsigned char c) const noexcept {
  for (;;) {
    if (s == 0) return root_next_[c];
    if (const state to = edge(s, c); to != 0) return to;
    s = nodes_[s].fail;
  }
}

bool secret_automaton::feed(state& s, std::string_view text) const {
  bool ended = false;
  for (unsigned char c : text) {
    s = step(s, c);
    ended = ended || nodes_[s].ends;
  }
  return ended;
}

}  // namespace airlock::filters::redaction
