#pragma once
// The bytes a scan keeps between the pieces of one stream (a streamed body, WebSocket
// messages in one direction): each piece is read after the last kCarry bytes of the ones
// before it, so that a secret split between pieces (up to kCarry long) is seen whole.

#include <cstddef>
#include <string>

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

}  // namespace airlock::filters::dlp
