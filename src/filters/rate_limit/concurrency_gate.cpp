#include "filters/rate_limit/concurrency_gate.hpp"

namespace airlock::filters::rate_limit {

bool concurrency_gate::try_enter(std::uint32_t cap) noexcept {
  // Compare-and-swap rather than add-then-undo: the count is never seen above the cap, so a
  // racing entry is never refused because of another one that is about to back out.
  std::uint32_t n = count_.load(std::memory_order_relaxed);
  do {
    if (n >= cap) return false;
  } while (!count_.compare_exchange_weak(n, n + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed));
  return true;
}

void concurrency_gate::leave() noexcept {
  count_.fetch_sub(1, std::memory_order_release);
}

}  // namespace airlock::filters::rate_limit
