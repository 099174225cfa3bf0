#include "core/saturating_steady.hpp"

#include "core/units.hpp"

#include <gtest/gtest.h>

namespace airlock::core {
namespace {

using namespace std::chrono_literals;

TEST(SaturatingSteady, ConvertsWhatFits) {
  EXPECT_EQ(saturating_steady(250ms), std::chrono::steady_clock::duration(250ms));
  EXPECT_EQ(saturating_steady(24h), std::chrono::steady_clock::duration(24h));
  EXPECT_EQ(saturating_steady(-5s), std::chrono::steady_clock::duration::zero());
}

TEST(SaturatingSteady, ClampsWhatWouldOverflowNanoseconds) {
  // 106752 days in nanoseconds is past INT64_MAX: duration_cast would be undefined behaviour.
  constexpr std::chrono::nanoseconds cap{std::int64_t{1} << 62};
  EXPECT_EQ(saturating_steady(std::chrono::milliseconds(106752LL * 86'400'000)), cap);
  EXPECT_EQ(saturating_steady(std::chrono::milliseconds::max()), cap);
  EXPECT_EQ(saturating_steady(std::chrono::hours::max()), cap);
  // And now() plus the cap still fits.
  EXPECT_GT((std::chrono::steady_clock::now() + cap).time_since_epoch().count(), 0);
}

TEST(ParseDuration, EveryAcceptedValueFitsSteadyClockNanoseconds) {
  // The largest accepted value converts without overflow; 106752d (past int64 nanoseconds) is
  // refused rather than accepted and broken at the first timer.
  EXPECT_EQ(parse_duration("106752d"), std::nullopt);
  EXPECT_EQ(parse_duration("9999999999s"), std::nullopt);
  const auto largest = parse_duration("4398046511104ms");  // 2^42 ms
  ASSERT_TRUE(largest);
  EXPECT_LT(largest->count(),
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds::max())
                    .count() /
                2);
  EXPECT_EQ(parse_duration("4398046511105ms"), std::nullopt);
}

}  // namespace
}  // namespace airlock::core
