#pragma once
// What a scan reads for each piece of one stream (a streamed body, a coded body's two readings,
// WebSocket messages in one direction): the piece after the last kCarry bytes of the ones before
// it, so that a secret split between pieces (up to kCarry long) is seen whole.
//
// Reading the carry again costs kCarry a piece, which a client that trickles its body a byte at
// a time (one-byte HTTP/2 DATA frames, chunks or WebSocket messages) would turn into 8 KiB of
// scanning per byte sent. So a stream has a budget of bytes scanned: kBudgetFactor times the
// bytes it brought, plus kBudgetSlack. Within it every piece is read after the whole carry;
// past it, a piece is read after the last kShortCarry bytes only (room for any built-in key
// class, also encoded; reach() grows it for a longer literal secret), and after the whole carry
// again once kFullEvery new bytes came or the stream ends: a longer secret (a PEM private key) is
// still found, at most kFullEvery bytes after it ends. A client sending pieces of a few KiB never
// leaves the budget.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

inline constexpr std::size_t kCarry = 8 * 1024;

// Keeps the last kCarry bytes of `carry`. The room a large piece took is given back rather
// than held while the stream idles.
inline void keep_tail(std::string& carry) {
  if (carry.size() <= kCarry) return;
  if (carry.capacity() > 4 * kCarry)
    carry = carry.substr(carry.size() - kCarry);
  else
    carry.erase(0, carry.size() - kCarry);
}

class scan_window {
 public:
  static constexpr std::uint64_t kBudgetFactor = 16;
  static constexpr std::uint64_t kBudgetSlack = 256 * 1024;
  static constexpr std::size_t kShortCarry = 512;
  static constexpr std::size_t kFullEvery = 1024;

  // The text to read for `piece` (`last`: the stream's last piece, when that is known). The
  // view lasts until the next add() or trim().
  std::string_view add(std::string_view piece, bool last = false) {
    buf_.append(piece);
    received_ += piece.size();
    since_full_ += piece.size();
    std::string_view text = buf_;
    const bool affordable = scanned_ + text.size() <= kBudgetFactor * received_ + kBudgetSlack;
    if (last || affordable || since_full_ >= kFullEvery) {
      since_full_ = 0;
    } else {
      text.remove_prefix(text.size() - std::min(text.size(), short_carry_ + piece.size()));
      ++short_reads_;
    }
    scanned_ += text.size();
    return text;
  }
  // The piece was read: only the carry is kept.
  void trim() { keep_tail(buf_); }
  // The short carry grown to hold `n` bytes before a piece (the longest spelling of a literal
  // secret the scanner looks for, which a stream with no last piece, WebSocket messages,
  // would otherwise never have read whole), up to kCarry.
  void reach(std::size_t n) { short_carry_ = std::clamp(n, kShortCarry, kCarry); }

  std::uint64_t scanned() const noexcept { return scanned_; }
  std::uint64_t short_reads() const noexcept { return short_reads_; }

 private:
  std::string buf_;
  std::uint64_t received_ = 0;
  std::uint64_t scanned_ = 0;
  std::uint64_t short_reads_ = 0;
  std::size_t since_full_ = 0;
  std::size_t short_carry_ = kShortCarry;
};

}  // namespace airlock::filters::dlp
