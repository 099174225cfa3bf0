#include "filters/rate_limit/breaker.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace airlock::filters::rate_limit {
namespace {

constexpr std::int64_t s = 1'000'000'000;
constexpr std::int64_t t0 = 5'000 * s;

breaker_params params(std::uint32_t max, std::int64_t window, std::int64_t cooldown) {
  return {max, window, cooldown};
}

TEST(RateLimitBreaker, TripsAboveMaxFailuresWithinWindow) {
  const auto p = params(3, 10 * s, 60 * s);
  breaker b;
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(b.record_failure(p, t0 + i * s)) << i;
  EXPECT_EQ(b.check(t0 + 3 * s), 0);
  EXPECT_TRUE(b.record_failure(p, t0 + 9 * s));  // fourth within 10s
  EXPECT_EQ(b.check(t0 + 9 * s), t0 + 69 * s);
  EXPECT_EQ(b.check(t0 + 69 * s - 1), t0 + 69 * s);
  // Failures while suspended neither count nor re-trip.
  for (int i = 0; i < 10; ++i)
    EXPECT_FALSE(b.record_failure(p, t0 + 10 * s));
  EXPECT_EQ(b.check(t0 + 10 * s), t0 + 69 * s);
  // After the cooldown: a fresh start, it takes four failures again.
  EXPECT_EQ(b.check(t0 + 69 * s), 0);
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(b.record_failure(p, t0 + 70 * s)) << i;
  EXPECT_TRUE(b.record_failure(p, t0 + 70 * s));
  EXPECT_EQ(b.check(t0 + 70 * s), t0 + 130 * s);
}

TEST(RateLimitBreaker, FailuresSpreadOverWindowsDoNotTrip) {
  const auto p = params(3, 10 * s, 60 * s);
  breaker b;
  // Three per window, windows back to back: never more than three within one.
  for (int w = 0; w < 5; ++w)
    for (int i = 0; i < 3; ++i)
      EXPECT_FALSE(b.record_failure(p, t0 + w * 10 * s + i)) << w << " " << i;
  EXPECT_EQ(b.check(t0 + 50 * s), 0);
  // The window starts at the first failure, and ends exactly `window` later.
  breaker c;
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(c.record_failure(p, t0));
  EXPECT_TRUE(c.record_failure(p, t0 + 10 * s - 1));
  breaker d;
  for (int i = 0; i < 3; ++i)
    EXPECT_FALSE(d.record_failure(p, t0));
  EXPECT_FALSE(d.record_failure(p, t0 + 10 * s));
}

TEST(RateLimitBreaker, OffWhenMaxFailuresIsZero) {
  breaker b;
  for (int i = 0; i < 1'000; ++i)
    EXPECT_FALSE(b.record_failure(params(0, 10 * s, 60 * s), t0));
  EXPECT_EQ(b.check(t0), 0);
}

TEST(RateLimitBreaker, MaxFailuresOneAndHugeDurations) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  breaker b;
  const auto p = params(1, max, max);
  EXPECT_FALSE(b.record_failure(p, t0));
  EXPECT_TRUE(b.record_failure(p, max - 1));  // window end saturates instead of wrapping
  EXPECT_EQ(b.check(max - 1), max);           // so does the end of the cooldown
}

TEST(RateLimitBreaker, ClockGoingBackwardsOpensANewWindow) {
  const auto p = params(2, 10 * s, 60 * s);
  breaker b;
  EXPECT_FALSE(b.record_failure(p, t0));
  EXPECT_FALSE(b.record_failure(p, t0));
  EXPECT_FALSE(b.record_failure(p, t0 - s));  // new window
  EXPECT_FALSE(b.record_failure(p, t0 - s));
  EXPECT_TRUE(b.record_failure(p, t0 - s));
}

TEST(RateLimitBreaker, ClearEndsSuspension) {
  const auto p = params(1, 10 * s, 60 * s);
  breaker b;
  EXPECT_FALSE(b.record_failure(p, t0));
  EXPECT_TRUE(b.record_failure(p, t0));
  EXPECT_NE(b.check(t0), 0);
  b.clear();
  EXPECT_EQ(b.check(t0), 0);
  EXPECT_FALSE(b.record_failure(p, t0));  // the count was forgotten too
  EXPECT_TRUE(b.record_failure(p, t0));
}

TEST(RateLimitBreaker, KillSwitch) {
  breaker b;
  EXPECT_FALSE(b.stopped());
  b.stop();
  b.stop();
  EXPECT_TRUE(b.stopped());
  EXPECT_EQ(b.check(t0), 0);  // independent of the breaker
  b.resume();
  EXPECT_FALSE(b.stopped());
}

}  // namespace
}  // namespace airlock::filters::rate_limit
