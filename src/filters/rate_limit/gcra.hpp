#pragma once
// The Generic Cell Rate Algorithm (ITU-T I.371 "virtual scheduling"): a token bucket kept as one
// number, the theoretical arrival time (TAT) of the next unit. A bucket that refills at A units
// per period P and holds at most B units lets `n` units through at `now` when
//
//     max(TAT, now) + n*P/A - now <= B*P/A        (then TAT := max(TAT, now) + n*P/A)
//
// so the state is a single std::atomic<std::int64_t> updated with compare-and-swap, and the
// numbers (P, A, B) live outside it: a reload that changes them keeps the state.
//
// Time is passed in by the caller (steady-clock nanoseconds); nothing here reads a clock.
//
// @par Thread Safety
// Every member function of gcra may be called concurrently (lock-free). gcra_params is a
// plain value.

#include <atomic>
#include <cstdint>
#include <limits>

namespace airlock::filters::rate_limit {

// The numbers of one bucket. `interval` is the cost of one unit as the fraction
// interval_num_ns / interval_den nanoseconds, so that bytes at gigabytes per second (far below
// one nanosecond per byte) are exact; `capacity_ns` is the burst as a span of time.
struct gcra_params {
  std::int64_t interval_num_ns = 0;  // 0 = no limit
  std::uint64_t interval_den = 1;
  std::int64_t capacity_ns = 0;

  bool enabled() const noexcept { return interval_num_ns > 0; }

  // Requests: `count` per `period_ns` with `burst` at once (0 = count, at least 1). The
  // interval is rounded up to whole nanoseconds (the rate errs on the strict side by less than
  // one nanosecond per request) so that exactly `burst` requests fit in a full bucket.
  static gcra_params requests(std::uint64_t count, std::int64_t period_ns,
                              std::uint64_t burst = 0) noexcept;
  // Bytes: `count` per `period_ns` with `burst` bytes at once (0 = count). Exact fraction; each
  // charge is rounded up to a whole nanosecond.
  static gcra_params bytes(std::uint64_t count, std::int64_t period_ns,
                           std::uint64_t burst = 0) noexcept;

  // What `cost` units take, in nanoseconds (rounded up, saturated at max_span_ns).
  std::int64_t cost_ns(std::uint64_t cost) const noexcept;

  // Every span (cost, capacity) is capped here (~73 years), so that sums with a steady-clock
  // time cannot overflow however large the configured numbers are.
  static constexpr std::int64_t max_span_ns = std::int64_t{1} << 61;
};

struct acquire_result {
  bool allowed = false;
  std::int64_t retry_after_ns = 0;  // when refused: how long until `cost` units would fit
};

class gcra {
 public:
  // Takes `cost` units, or nothing. A `cost` above the burst never fits; its retry_after_ns is
  // then still the time until the bucket is full.
  acquire_result try_acquire(const gcra_params& p, std::int64_t now_ns,
                             std::uint64_t cost = 1) noexcept;

  // Gives back what a successful try_acquire (or reserve/charge) took, e.g. when a later limit
  // of the same admission refuses, so a refused request consumes nothing.
  void refund(const gcra_params& p, std::uint64_t cost = 1) noexcept;

  // Always takes `cost` units, going into debt if need be, and returns how long the caller must
  // wait before it may use them (0 = now). For throttling: the caller delays, never refuses.
  std::int64_t reserve(const gcra_params& p, std::int64_t now_ns, std::uint64_t cost) noexcept;

  // After-the-fact debt (bytes_per_hour: bytes counted once a body has been sent). The debt
  // stops at one whole bucket: the quota is refused for at most its own period (an hour for
  // an hourly quota) after the charge, as a sliding window would be (every byte has left it an
  // hour later), not for as many hours as one large body was over it.
  void charge(const gcra_params& p, std::int64_t now_ns, std::uint64_t cost) noexcept;

  // 0 when at least one unit is available; else how long until one is.
  std::int64_t exhausted(const gcra_params& p, std::int64_t now_ns) const noexcept;

  // Units available at `now`, for admin views and tests (rounded down).
  std::uint64_t available(const gcra_params& p, std::int64_t now_ns) const noexcept;

  // Back to a full bucket.
  void reset() noexcept { tat_.store(empty_tat, std::memory_order_relaxed); }

  std::int64_t tat_for_test() const noexcept { return tat_.load(std::memory_order_relaxed); }

 private:
  // Far in the past: max(tat, now) is always `now`, i.e. a full bucket.
  static constexpr std::int64_t empty_tat = std::numeric_limits<std::int64_t>::min();
  // The bucket is self-contained (no other memory is published through it), so relaxed order
  // is enough: every update is one read-modify-write in the atomic's single modification order.
  std::atomic<std::int64_t> tat_{empty_tat};
};

}  // namespace airlock::filters::rate_limit
