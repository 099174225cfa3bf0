#include "filters/dlp/carry.hpp"

#include <gtest/gtest.h>

// The scanning window of a stream (carry.hpp): what each piece is read with, and the budget
// that keeps a client trickling its body a byte at a time from turning each byte into a read of
// the whole carry.
namespace airlock::filters::dlp {
namespace {

TEST(dlp_scan_window, EachPieceIsReadAfterTheCarryWithinTheBudget) {
  scan_window w;
  const std::string first(3000, 'a');
  EXPECT_EQ(w.add(first), first);
  w.trim();
  const auto text = w.add("bcd");
  EXPECT_EQ(text, first + "bcd");  // the whole carry, then the piece
  w.trim();
  // The carry is the last kCarry bytes.
  w.add(std::string(2 * kCarry, 'x'));
  w.trim();
  EXPECT_EQ(w.add("y").size(), kCarry + 1);
  EXPECT_EQ(w.short_reads(), 0u);
}

TEST(dlp_scan_window, ATrickledStreamCostsAFewHundredBytesAByte) {
  scan_window w;
  constexpr std::size_t n = 1 << 20;  // a MiB, a byte a piece
  for (std::size_t i = 0; i < n; ++i) {
    const auto text = w.add("z");
    ASSERT_EQ(text.back(), 'z');
    ASSERT_GE(text.size(), std::min<std::size_t>(i + 1, scan_window::kShortCarry + 1));
    w.trim();
  }
  // Each piece read after the short carry, and the whole carry every kFullEvery bytes: about
  // kShortCarry + kCarry / kFullEvery + 1 bytes read per byte, not kCarry.
  const auto per_byte = static_cast<double>(w.scanned() - scan_window::kBudgetSlack) / n;
  EXPECT_LT(per_byte, scan_window::kShortCarry + kCarry / scan_window::kFullEvery + 2);
  EXPECT_GT(w.short_reads(), n / 2);
}

TEST(dlp_scan_window, PastTheBudgetALongSecretIsStillReadWhole) {
  scan_window w;
  // Spend the budget with byte-sized pieces.
  for (std::size_t i = 0; i < scan_window::kBudgetSlack; ++i) {
    w.add(" ");
    w.trim();
  }
  ASSERT_GT(w.short_reads(), 0u);
  // A 3000-byte secret, a byte a piece: some read within the next kFullEvery bytes holds all
  // of it.
  const std::string secret = "<" + std::string(2998, 's') + ">";
  bool seen_whole = false;
  auto feed = [&](std::string_view piece, bool last) {
    const auto text = w.add(piece, last);
    seen_whole = seen_whole || text.find(secret) != std::string_view::npos;
    w.trim();
  };
  for (char c : secret)
    feed(std::string_view(&c, 1), false);
  for (std::size_t i = 0; i < scan_window::kFullEvery && !seen_whole; ++i)
    feed(" ", false);
  EXPECT_TRUE(seen_whole);
  // And the stream's last piece is always read after the whole carry (the first secret out of
  // it first).
  for (std::size_t i = 0; i < kCarry; ++i)
    feed(" ", false);
  for (char c : secret.substr(0, secret.size() - 1)) {
    ASSERT_EQ(w.add(std::string_view(&c, 1)).find(secret), std::string_view::npos);
    w.trim();
  }
  EXPECT_NE(w.add(">", true).find(secret), std::string_view::npos);
}

TEST(dlp_scan_window, PastTheBudgetAPieceIsReadAfterReach) {
  // A stream with no last piece (WebSocket messages): a literal secret of 2000 bytes, sent a
  // byte at a time past the budget, is read whole when its last byte comes.
  scan_window w;
  w.reach(2000);
  for (std::size_t i = 0; i < scan_window::kBudgetSlack; ++i) {
    w.add(" ");
    w.trim();
  }
  const std::string secret = "<" + std::string(1998, 's') + ">";
  bool whole_at_last = false;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    const auto text = w.add(std::string_view(secret).substr(i, 1));
    if (i + 1 == secret.size()) whole_at_last = text.find(secret) != std::string_view::npos;
    w.trim();
  }
  EXPECT_TRUE(whole_at_last);
}

}  // namespace
}  // namespace airlock::filters::dlp
