#include "filters/rate_limit/gcra.hpp"

#include <algorithm>

namespace airlock::filters::rate_limit {
namespace {

// 128-bit intermediates: cost * interval and time + span cannot overflow them (a cost is below
// 2^64, an interval and a time below 2^63), and the results are clamped back into 64 bits.
__extension__ using i128 = __int128;
__extension__ using u128 = unsigned __int128;

constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();

std::int64_t clamp64(i128 v) noexcept {
  if (v > i64_max) return i64_max;
  if (v < i64_min) return i64_min;
  return static_cast<std::int64_t>(v);
}

std::int64_t clamp_span(u128 v) noexcept {
  return v > static_cast<u128>(gcra_params::max_span_ns) ? gcra_params::max_span_ns
                                                         : static_cast<std::int64_t>(v);
}

// ceil(a / b) for b > 0.
u128 div_ceil(u128 a, u128 b) noexcept {
  return a / b + (a % b != 0 ? 1 : 0);
}

// max(tat, now) + cost, saturated: TAT only ever moves forward from `now`.
std::int64_t advance(std::int64_t tat, std::int64_t now, std::int64_t cost_ns) noexcept {
  return clamp64(static_cast<i128>(std::max(tat, now)) + cost_ns);
}

// How far `tat` is beyond what the bucket holds at `now` (0 when within the burst).
std::int64_t overdraft(std::int64_t tat, std::int64_t now, std::int64_t capacity_ns) noexcept {
  const i128 d = static_cast<i128>(tat) - now - capacity_ns;
  return d > 0 ? clamp64(d) : 0;
}

}  // namespace

gcra_params gcra_params::requests(std::uint64_t count, std::int64_t period_ns,
                                  std::uint64_t burst) noexcept {
  gcra_params p;
  if (count == 0 || period_ns <= 0) return p;
  if (burst == 0) burst = count;
  const u128 interval = div_ceil(static_cast<u128>(period_ns), count);
  p.interval_num_ns = clamp_span(std::max<u128>(interval, 1));
  p.interval_den = 1;
  p.capacity_ns = clamp_span(static_cast<u128>(p.interval_num_ns) * burst);
  return p;
}

gcra_params gcra_params::bytes(std::uint64_t count, std::int64_t period_ns,
                               std::uint64_t burst) noexcept {
  gcra_params p;
  if (count == 0 || period_ns <= 0) return p;
  if (burst == 0) burst = count;
  p.interval_num_ns = std::min(period_ns, max_span_ns);
  p.interval_den = count;
  p.capacity_ns = p.cost_ns(burst);
  return p;
}

std::int64_t gcra_params::cost_ns(std::uint64_t cost) const noexcept {
  const u128 total = static_cast<u128>(cost) * static_cast<u128>(interval_num_ns);
  if (interval_den == 1) return clamp_span(total);
  // 64-bit division when the product fits: the common case costs no libgcc call.
  if ((total >> 64) == 0) {
    const auto t = static_cast<std::uint64_t>(total);
    return clamp_span(t / interval_den + (t % interval_den != 0 ? 1 : 0));
  }
  return clamp_span(div_ceil(total, interval_den));
}

acquire_result gcra::try_acquire(const gcra_params& p, std::int64_t now_ns,
                                 std::uint64_t cost) noexcept {
  const std::int64_t c = p.cost_ns(cost);
  std::int64_t old = tat_.load(std::memory_order_relaxed);
  for (;;) {
    const std::int64_t next = advance(old, now_ns, c);
    if (const std::int64_t over = overdraft(next, now_ns, p.capacity_ns); over > 0)
      return {false, over};
    if (tat_.compare_exchange_weak(old, next, std::memory_order_relaxed)) return {true, 0};
  }
}

void gcra::refund(const gcra_params& p, std::uint64_t cost) noexcept {
  const std::int64_t c = p.cost_ns(cost);
  std::int64_t old = tat_.load(std::memory_order_relaxed);
  // A saturating subtraction; a plain fetch_sub could wrap the "empty" sentinel around.
  while (!tat_.compare_exchange_weak(old, clamp64(static_cast<i128>(old) - c),
                                     std::memory_order_relaxed)) {
  }
}

std::int64_t gcra::reserve(const gcra_params& p, std::int64_t now_ns, std::uint64_t cost) noexcept {
  const std::int64_t c = p.cost_ns(cost);
  std::int64_t old = tat_.load(std::memory_order_relaxed);
  std::int64_t next = 0;
  do {
    next = advance(old, now_ns, c);
  } while (!tat_.compare_exchange_weak(old, next, std::memory_order_relaxed));
  return overdraft(next, now_ns, p.capacity_ns);
}

void gcra::charge(const gcra_params& p, std::int64_t now_ns, std::uint64_t cost) noexcept {
  const std::int64_t c = p.cost_ns(cost);
  const std::int64_t most =
      clamp64(static_cast<i128>(now_ns) + 2 * static_cast<i128>(p.capacity_ns));
  std::int64_t old = tat_.load(std::memory_order_relaxed);
  std::int64_t next = 0;
  do {
    next = std::max(std::min(advance(old, now_ns, c), most), old);  // a charge never refunds
  } while (!tat_.compare_exchange_weak(old, next, std::memory_order_relaxed));
}

std::int64_t gcra::exhausted(const gcra_params& p, std::int64_t now_ns) const noexcept {
  const std::int64_t tat = tat_.load(std::memory_order_relaxed);
  return overdraft(advance(tat, now_ns, p.cost_ns(1)), now_ns, p.capacity_ns);
}

std::uint64_t gcra::available(const gcra_params& p, std::int64_t now_ns) const noexcept {
  if (!p.enabled()) return 0;
  const std::int64_t tat = tat_.load(std::memory_order_relaxed);
  const i128 room =
      static_cast<i128>(p.capacity_ns) - (static_cast<i128>(std::max(tat, now_ns)) - now_ns);
  if (room <= 0) return 0;
  // room * den / num, rounded down: the units whose rounded-up cost fits may be one more, which
  // is why this is for display only.
  const u128 units =
      static_cast<u128>(room) * p.interval_den / static_cast<u128>(p.interval_num_ns);
  return units > std::numeric_limits<std::uint64_t>::max()
             ? std::numeric_limits<std::uint64_t>::max()
             : static_cast<std::uint64_t>(units);
}

}  // namespace airlock::filters::rate_limit
