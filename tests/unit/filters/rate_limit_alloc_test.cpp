#include "filters/rate_limit/plan.hpp"

#include "allocation_counter.hpp"
#include "rate_limit_test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::filters::rate_limit {
namespace {

using namespace test;

using airlock::test::allocations;
using airlock::test::count_scope;

TEST(RateLimitAlloc, AdmittedPathDoesNotAllocate) {
  registry reg;
  policy::model::rate ar = per_second(1'000'000, 1'000'000);
  ar.concurrent = 100;
  ar.requests_per_hour = 1'000'000;
  ar.bytes_per_hour = 1ull << 40;
  ar.upload_bytes_per_second = 1 << 30;
  policy::model::rate rr = ar;
  const auto p =
      reg.bind({agent("a", ar, {rule("r", rr), rule("free")}), agent("b", {}, {rule("free")})});
  std::size_t admitted = 0;
  {
    count_scope scope;
    for (int i = 0; i < 100; ++i) {
      admission a = p->admit(0, 0, t0);
      admitted += a.admitted() ? 1 : 0;
      admission moved = std::move(a);
      admitted += p->admit(0, 1, t0).admitted() ? 1 : 0;
      admitted += p->admit(1, 0, t0).admitted() ? 1 : 0;
      (void)p->throttle(0, 0, direction::upload, 16'384, t0);
      (void)p->record_failure(0, t0);  // breaker off
    }
  }
  EXPECT_EQ(admitted, 300u);
  EXPECT_EQ(allocations, 0u);
}

TEST(RateLimitAlloc, CounterWorks) {
  // The refusal path builds its message: the counter must see that, or the test above proves
  // nothing.
  registry reg;
  const auto p = reg.bind({agent("a-rather-long-agent-name-beyond-sso", per_second(1, 1))});
  ASSERT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
  std::size_t seen = 0;
  {
    count_scope scope;
    const admission a = p->admit(0, plan::no_rule, t0);
    seen = allocations;
    EXPECT_FALSE(a.admitted());
  }
  EXPECT_GT(seen, 0u);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
