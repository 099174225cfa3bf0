#include "filters/rate_limit/breaker.hpp"

#include <algorithm>

namespace airlock::filters::rate_limit {
namespace {

std::int64_t add_saturated(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  return r;
}

}  // namespace

bool breaker::record_failure(const breaker_params& p, std::int64_t now_ns) {
  if (!p.enabled()) return false;
  std::lock_guard lock(mutex_);
  if (now_ns < suspended_until_.load(std::memory_order_relaxed)) return false;
  // A new window after a quiet one (or when the caller's clock went backwards, which a steady
  // clock does not, but a window must never be stretched by it).
  if (failures_ == 0 || now_ns < window_start_ ||
      now_ns >= add_saturated(window_start_, std::max<std::int64_t>(p.window_ns, 0))) {
    window_start_ = now_ns;
    failures_ = 0;
  }
  if (++failures_ <= p.max_failures) return false;
  suspended_until_.store(add_saturated(now_ns, std::max<std::int64_t>(p.cooldown_ns, 0)),
                         std::memory_order_relaxed);
  // A fresh start after the cooldown: the failures that tripped it are spent.
  failures_ = 0;
  return true;
}

void breaker::clear() {
  std::lock_guard lock(mutex_);
  suspended_until_.store(never, std::memory_order_relaxed);
  failures_ = 0;
}

void breaker::suspend_until(std::int64_t until_ns) {
  std::lock_guard lock(mutex_);
  if (until_ns > suspended_until_.load(std::memory_order_relaxed)) {
    suspended_until_.store(until_ns, std::memory_order_relaxed);
    failures_ = 0;
  }
}

}  // namespace airlock::filters::rate_limit
