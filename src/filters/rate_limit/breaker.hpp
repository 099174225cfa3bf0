#pragma once
// Stops a runaway agent. The circuit breaker counts failures (refusals and upstream errors):
// more than `max_failures` within `window` (a window opens at the first failure after a quiet
// one) suspends the agent for `cooldown`; after that it starts afresh. Next to it, the kill
// switch an operator flips from the admin port: stop() refuses everything until resume().
//
// Time is passed in by the caller (steady-clock nanoseconds); nothing here reads a clock.
//
// @par Thread Safety
// Every member function may be called concurrently. check(), stopped(), stop() and resume() are
// single atomic operations; record_failure() takes a mutex (failures only, never the admitted
// path).

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>

namespace airlock::filters::rate_limit {

struct breaker_params {
  std::uint32_t max_failures = 0;  // 0 = off
  std::int64_t window_ns = 60'000'000'000;
  std::int64_t cooldown_ns = 300'000'000'000;
  bool enabled() const noexcept { return max_failures != 0; }
};

class breaker {
 public:
  // The time the suspension ends, when `now` is within one; else 0.
  std::int64_t check(std::int64_t now_ns) const noexcept {
    const std::int64_t until = suspended_until_.load(std::memory_order_relaxed);
    return now_ns < until ? until : 0;
  }

  // Counts one failure; true when this call tripped the breaker (exactly one caller sees true
  // per trip). Failures while suspended are not counted.
  bool record_failure(const breaker_params& p, std::int64_t now_ns);

  // Ends a suspension now and forgets the failures counted so far.
  void clear();

  // A suspension decided elsewhere (another replica's trip, state: redis) until `until_ns`;
  // never shortens one already in force.
  void suspend_until(std::int64_t until_ns);

  void stop() noexcept { stopped_.store(true, std::memory_order_relaxed); }
  void resume() noexcept { stopped_.store(false, std::memory_order_relaxed); }
  bool stopped() const noexcept { return stopped_.load(std::memory_order_relaxed); }

 private:
  static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::min();

  std::atomic<bool> stopped_{false};
  std::atomic<std::int64_t> suspended_until_{never};
  std::mutex mutex_;
  std::int64_t window_start_ = 0;  // guarded by mutex_
  std::uint32_t failures_ = 0;     // guarded by mutex_; failures in the current window
};

}  // namespace airlock::filters::rate_limit
