#include "filters/rate_limit/gcra.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace airlock::filters::rate_limit {
namespace {

constexpr std::int64_t ms = 1'000'000;
constexpr std::int64_t s = 1'000 * ms;
constexpr std::int64_t hour = 3'600 * s;
constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();

// An arbitrary steady-clock reading: tests never depend on the real clock.
constexpr std::int64_t t0 = 1'234 * s + 567;

int take_all(gcra& g, const gcra_params& p, std::int64_t now, int limit = 1'000'000) {
  int n = 0;
  while (n < limit && g.try_acquire(p, now).allowed)
    ++n;
  return n;
}

TEST(RateLimitGcra, ParamsForRequests) {
  const auto p = gcra_params::requests(10, s, 5);
  EXPECT_TRUE(p.enabled());
  EXPECT_EQ(p.cost_ns(1), 100 * ms);
  EXPECT_EQ(p.capacity_ns, 500 * ms);
  // Burst 0 means one period's worth.
  EXPECT_EQ(gcra_params::requests(600, 60 * s).capacity_ns, 60 * s);
  EXPECT_FALSE(gcra_params::requests(0, s).enabled());
  EXPECT_FALSE(gcra_params::requests(5, 0).enabled());
  EXPECT_FALSE(gcra_params{}.enabled());
}

TEST(RateLimitGcra, BurstThenSteadyRate) {
  const auto p = gcra_params::requests(10, s, 5);  // one every 100ms, five at once
  gcra g;
  EXPECT_EQ(take_all(g, p, t0), 5);
  // Exactly one more per interval, never earlier.
  for (int k = 1; k <= 20; ++k) {
    EXPECT_FALSE(g.try_acquire(p, t0 + k * 100 * ms - 1).allowed) << k;
    EXPECT_TRUE(g.try_acquire(p, t0 + k * 100 * ms).allowed) << k;
    EXPECT_FALSE(g.try_acquire(p, t0 + k * 100 * ms).allowed) << k;
  }
}

TEST(RateLimitGcra, RetryAfterIsExact) {
  const auto p = gcra_params::requests(10, s, 5);
  gcra g;
  ASSERT_EQ(take_all(g, p, t0), 5);
  auto r = g.try_acquire(p, t0);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.retry_after_ns, 100 * ms);
  r = g.try_acquire(p, t0 + 30 * ms);
  EXPECT_EQ(r.retry_after_ns, 70 * ms);
  // A refusal takes nothing: the wait does not grow with refused attempts.
  for (int i = 0; i < 100; ++i)
    (void)g.try_acquire(p, t0 + 30 * ms);
  EXPECT_EQ(g.try_acquire(p, t0 + 30 * ms).retry_after_ns, 70 * ms);
  EXPECT_TRUE(g.try_acquire(p, t0 + 100 * ms).allowed);
  // A cost of 3 needs three intervals' room.
  EXPECT_EQ(g.try_acquire(p, t0 + 100 * ms, 3).retry_after_ns, 300 * ms);
}

TEST(RateLimitGcra, RefillAfterIdleIsCappedAtBurst) {
  const auto p = gcra_params::requests(10, s, 5);
  gcra g;
  ASSERT_EQ(take_all(g, p, t0), 5);
  EXPECT_EQ(take_all(g, p, t0 + 250 * ms), 2);  // 2.5 intervals: two whole tokens
  EXPECT_EQ(take_all(g, p, t0 + hour), 5);
  EXPECT_EQ(take_all(g, p, t0 + 1'000 * hour), 5);
}

TEST(RateLimitGcra, NonIntegralIntervalStillGivesTheWholeBurst) {
  // 7 per second is 142857142.86ns each: rounded up, so that exactly `burst` fit at once.
  const auto p = gcra_params::requests(7, s, 7);
  gcra g;
  EXPECT_EQ(take_all(g, p, t0), 7);
  const auto r = g.try_acquire(p, t0);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.retry_after_ns, 142'857'143);
  // Never faster than configured: the seventh token of the next second comes 1ns after it
  // (seven intervals rounded up), so a millisecond poll over that second gets six.
  int n = 0;
  for (std::int64_t t = t0; t <= t0 + s; t += ms)
    n += take_all(g, p, t);
  EXPECT_EQ(n, 6);
  EXPECT_EQ(take_all(g, p, t0 + s + 1), 1);
}

TEST(RateLimitGcra, RefundGivesTokensBack) {
  const auto p = gcra_params::requests(10, s, 5);
  gcra g;
  ASSERT_EQ(take_all(g, p, t0), 5);
  g.refund(p);
  g.refund(p);
  EXPECT_EQ(take_all(g, p, t0), 2);
  // Refunding into a full bucket does not raise it above the burst.
  gcra full;
  for (int i = 0; i < 10; ++i)
    full.refund(p);
  EXPECT_EQ(take_all(full, p, t0), 5);
  // Nor after an idle period in which TAT fell behind the clock.
  ASSERT_EQ(take_all(full, p, t0 + hour), 5);
  full.refund(p, 100);
  EXPECT_EQ(take_all(full, p, t0 + 2 * hour), 5);
}

TEST(RateLimitGcra, ReserveThrottlesToTheConfiguredAverage) {
  // 1000 bytes/s with one second of burst; writes of 250 bytes, each sent after its delay.
  const auto p = gcra_params::bytes(1'000, s);
  EXPECT_EQ(p.capacity_ns, s);
  gcra g;
  std::int64_t now = t0;
  for (int k = 0; k < 100; ++k) {
    const std::int64_t d = g.reserve(p, now, 250);
    // Write k may start once (k+1)*250 bytes minus the 1000-byte burst have drained.
    const std::int64_t expect_start = t0 + std::max<std::int64_t>(0, (k + 1) * 250 - 1'000) * ms;
    EXPECT_EQ(now + d, expect_start) << k;
    now += d;
  }
}

TEST(RateLimitGcra, ReserveAverageAtFractionalAndHighRates) {
  struct rate_case {
    std::uint64_t bytes_per_second;
    std::uint64_t write;
  };
  for (const rate_case c : {rate_case{3 * (1u << 20), 16 * 1024}, rate_case{10ull << 30, 64 * 1024},
                            rate_case{7, 1}, rate_case{999'999'937, 1'500}}) {
    const auto p = gcra_params::bytes(c.bytes_per_second, s);
    gcra g;
    std::int64_t now = t0;
    // Enough writes to drain the one-second burst three times over.
    const std::uint64_t writes = std::max<std::uint64_t>(2'000, 3 * c.bytes_per_second / c.write);
    for (std::uint64_t k = 0; k < writes; ++k)
      now += g.reserve(p, now, c.write);
    // The last write starts when everything but one second's burst has drained at the rate;
    // each write rounds up by less than 1ns.
    const long double bytes = static_cast<long double>(writes) * c.write;
    const long double ideal = (bytes - c.bytes_per_second) / c.bytes_per_second * s;
    const long double actual = static_cast<long double>(now - t0);
    EXPECT_GE(actual, ideal - 1) << c.bytes_per_second;
    EXPECT_LE(actual, ideal + writes + 1) << c.bytes_per_second;
  }
}

TEST(RateLimitGcra, ReserveAlwaysCharges) {
  const auto p = gcra_params::bytes(1'000, s);
  gcra g;
  EXPECT_EQ(g.reserve(p, t0, 5'000), 4 * s);  // larger than the burst: wait for the rest
  EXPECT_EQ(g.reserve(p, t0, 1'000), 5 * s);
  EXPECT_FALSE(g.try_acquire(p, t0 + 5 * s).allowed);
  EXPECT_TRUE(g.try_acquire(p, t0 + 6 * s, 1'000).allowed);
}

TEST(RateLimitGcra, QuotaDebtAndRecovery) {
  // bytes_per_hour: 1000 bytes an hour, charged after the fact.
  const auto p = gcra_params::bytes(1'000, hour);
  gcra g;
  EXPECT_EQ(g.exhausted(p, t0), 0);
  g.charge(p, t0, 999);
  EXPECT_EQ(g.exhausted(p, t0), 0);  // one byte left
  g.charge(p, t0, 501);              // 500 bytes of debt
  // The debt (500 bytes = half an hour) and one byte (3.6s) must drain first.
  const std::int64_t wait = hour / 2 + hour / 1'000;
  EXPECT_EQ(g.exhausted(p, t0), wait);
  EXPECT_EQ(g.exhausted(p, t0 + wait - 1), 1);
  EXPECT_EQ(g.exhausted(p, t0 + wait), 0);
  // Recovery is capped at the quota, however long the idle time.
  EXPECT_EQ(g.available(p, t0 + 100 * hour), 1'000u);
}

TEST(RateLimitGcra, QuotaDebtStopsAtOneBucket) {
  // A body ten times the hourly quota: refused for an hour, not for nine (red team 21).
  const auto p = gcra_params::bytes(1'000, hour);
  gcra g;
  g.charge(p, t0, 10'000);
  EXPECT_EQ(g.exhausted(p, t0), hour + hour / 1'000);
  EXPECT_EQ(g.exhausted(p, t0 + hour + hour / 1'000), 0);
  // More charged while in debt still ends within the hour from now.
  g.charge(p, t0 + hour / 2, 5'000);
  EXPECT_EQ(g.exhausted(p, t0 + hour / 2), hour + hour / 1'000);
  // Within one bucket the debt is what was charged (QuotaDebtAndRecovery).
  gcra h;
  h.charge(p, t0, 1'500);
  EXPECT_EQ(h.exhausted(p, t0), hour / 2 + hour / 1'000);
}

TEST(RateLimitGcra, RequestQuota) {
  // requests_per_hour: 3 → T = 20 minutes, burst 3.
  const auto p = gcra_params::requests(3, hour);
  gcra g;
  EXPECT_EQ(take_all(g, p, t0), 3);
  EXPECT_EQ(g.try_acquire(p, t0).retry_after_ns, hour / 3);
  EXPECT_EQ(take_all(g, p, t0 + hour / 3), 1);
}

TEST(RateLimitGcra, Available) {
  const auto p = gcra_params::requests(10, s, 5);
  gcra g;
  EXPECT_EQ(g.available(p, t0), 5u);
  (void)g.try_acquire(p, t0, 2);
  EXPECT_EQ(g.available(p, t0), 3u);
  EXPECT_EQ(g.available(p, t0 + 150 * ms), 4u);
  EXPECT_EQ(g.available(gcra_params{}, t0), 0u);
  g.reset();
  EXPECT_EQ(g.available(p, t0), 5u);
}

TEST(RateLimitGcra, ClockNearZeroAndNegative) {
  const auto p = gcra_params::requests(10, s, 5);
  for (const std::int64_t start : {std::int64_t{0}, std::int64_t{-1}, -hour, i64_min / 2}) {
    gcra g;
    EXPECT_EQ(take_all(g, p, start), 5) << start;
    EXPECT_EQ(g.try_acquire(p, start).retry_after_ns, 100 * ms) << start;
    EXPECT_EQ(take_all(g, p, start + 100 * ms), 1) << start;
  }
}

TEST(RateLimitGcra, HugeNumbersSaturateInsteadOfOverflowing) {
  // A rate so high that one unit costs less than a nanosecond, and a burst of 2^64-1.
  const auto fast = gcra_params::bytes(u64_max, 1, u64_max);
  EXPECT_TRUE(fast.enabled());
  EXPECT_EQ(fast.cost_ns(1), 1);  // rounded up
  EXPECT_EQ(fast.cost_ns(u64_max), 1);
  const auto huge_burst = gcra_params::requests(1, s, u64_max);
  EXPECT_EQ(huge_burst.capacity_ns, gcra_params::max_span_ns);
  const auto slow = gcra_params::requests(1, i64_max);
  EXPECT_EQ(slow.cost_ns(u64_max), gcra_params::max_span_ns);
  EXPECT_EQ(gcra_params::requests(u64_max, 1).cost_ns(1), 1);

  gcra g;
  const auto p = gcra_params::requests(10, s, 5);
  // A cost no bucket can hold: refused, with a finite wait.
  auto r = g.try_acquire(p, t0, u64_max);
  EXPECT_FALSE(r.allowed);
  EXPECT_GT(r.retry_after_ns, 0);
  EXPECT_EQ(take_all(g, p, t0), 5);  // ...and nothing was taken

  // Debt far beyond int64 time saturates: the bucket stays exhausted instead of wrapping
  // around into a full one.
  gcra d;
  for (int i = 0; i < 10; ++i)
    EXPECT_GE(d.reserve(slow, t0, u64_max), i == 0 ? 0 : gcra_params::max_span_ns) << i;
  EXPECT_EQ(d.tat_for_test(), i64_max);
  EXPECT_FALSE(d.try_acquire(p, t0 + 1'000 * hour).allowed);
  EXPECT_FALSE(d.try_acquire(p, 0).allowed);
  EXPECT_GT(d.exhausted(p, i64_min), 0);
  d.refund(slow, u64_max);  // no wrap either way
  // Time at the very end of the range.
  gcra e;
  EXPECT_TRUE(e.try_acquire(huge_burst, i64_max).allowed);
  EXPECT_EQ(e.reserve(huge_burst, i64_max, u64_max), 0);
  gcra f;
  f.refund(p, u64_max);
  EXPECT_EQ(f.tat_for_test(), i64_min);
  EXPECT_EQ(take_all(f, p, i64_min), 5);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
