#include "filters/redaction/secret_automaton.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

// The secrets' spellings as one automaton (secret_automaton.hpp), against the plain answer:
// the longest end of the text read that starts a spelling, and whether a spelling ended in it.
namespace airlock::filters::redaction {
namespace {

std::size_t longest_start_at_end(const std::vector<std::string>& spellings,
                                 const std::string& text) {
  std::size_t best = 0;
  for (const auto& s : spellings)
    for (std::size_t n = 1; n <= std::min(s.size(), text.size()); ++n)
      if (text.compare(text.size() - n, n, s, 0, n) == 0) best = std::max(best, n);
  return best;
}

TEST(redaction_secret_automaton, FollowsTextReadInPieces) {
  const std::vector<std::string_view> spellings = {"abcd", "bcx", "cde"};
  const secret_automaton a(spellings);
  secret_automaton::state s = 0;
  EXPECT_FALSE(a.feed(s, "xxab"));
  EXPECT_EQ(a.depth(s), 2u);
  EXPECT_FALSE(a.feed(s, "c"));
  EXPECT_EQ(a.depth(s), 3u);    // "abc"
  EXPECT_TRUE(a.feed(s, "x"));  // "bcx", through the failure link from "abc"
  EXPECT_EQ(a.depth(s), 3u);
  EXPECT_FALSE(a.feed(s, "zz"));
  EXPECT_EQ(a.depth(s), 0u);
  EXPECT_TRUE(a.empty() == false);
  EXPECT_TRUE(secret_automaton({}).empty());
}

TEST(redaction_secret_automaton, AgreesWithThePlainAnswer) {
  std::mt19937 rng(7);
  auto word = [&](std::size_t n) {
    std::string w;
    for (std::size_t i = 0; i < n; ++i)
      w += "abc"[rng() % 3];
    return w;
  };
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> spellings;
    for (int i = 0; i < 1 + round % 5; ++i)
      spellings.push_back(word(1 + rng() % 6));
    const std::vector<std::string_view> views(spellings.begin(), spellings.end());
    const secret_automaton a(views);
    secret_automaton::state s = 0;
    std::string text;
    for (int piece = 0; piece < 8; ++piece) {
      const std::string more = word(rng() % 5);
      const std::string before = text;
      text += more;
      bool ended = false;  // a spelling ends within the bytes just read
      for (const auto& sp : spellings)
        for (std::size_t end = before.size() + 1; end <= text.size(); ++end)
          ended = ended || (end >= sp.size() && text.compare(end - sp.size(), sp.size(), sp) == 0);
      ASSERT_EQ(a.feed(s, more), ended) << text;
      ASSERT_EQ(a.depth(s), longest_start_at_end(spellings, text)) << text;
    }
  }
}

}  // namespace
}  // namespace airlock::filters::redaction
