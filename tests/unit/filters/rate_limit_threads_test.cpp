#include "filters/rate_limit/plan.hpp"

#include "rate_limit_test_util.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

// Several threads at once on the same state, at a fixed `now`: the lock-free updates must lose
// nothing and let through exactly what a single thread would.
namespace airlock::filters::rate_limit {
namespace {

using namespace test;

constexpr int threads = 4;

// Runs body(thread_index) on `threads` threads released together, and sums what they return.
long run_together(const std::function<long(int)>& body) {
  std::atomic<bool> go{false};
  std::atomic<long> total{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) {
      }
      total += body(t);
    });
  go.store(true, std::memory_order_release);
  for (auto& th : pool)
    th.join();
  return total.load();
}

TEST(RateLimitThreads, BucketGivesExactlyTheBurst) {
  // A burst large enough that the threads contend for a while before it runs out.
  const auto p = gcra_params::requests(10, s, 100'000);
  gcra g;
  const long n = run_together([&](int) {
    long ok = 0;
    for (int i = 0; i < 50'000; ++i)
      ok += g.try_acquire(p, t0).allowed ? 1 : 0;
    return ok;
  });
  EXPECT_EQ(n, 100'000);
  EXPECT_EQ(g.tat_for_test(), t0 + 100'000 * p.cost_ns(1));
}

TEST(RateLimitThreads, ReserveLosesNoCharge) {
  const auto p = gcra_params::bytes(1'000, s);
  gcra g;
  run_together([&](int) {
    for (int i = 0; i < 50'000; ++i)
      (void)g.reserve(p, t0, 3);
    return 0L;
  });
  EXPECT_EQ(g.tat_for_test(), t0 + std::int64_t{threads} * 50'000 * 3 * ms);
}

TEST(RateLimitThreads, AdmissionsGiveExactlyTheTightestBurstAndRefundTheRest) {
  registry reg;
  policy::model::rate ar = per_second(10, 1'000);
  ar.requests_per_hour = 5'000;
  const auto p = reg.bind({agent("a", ar, {rule("r", per_second(1, 300))})});
  const long n = run_together([&](int) {
    long ok = 0;
    for (int i = 0; i < 500; ++i)
      ok += p->admit(0, 0, t0).admitted() ? 1 : 0;
    return ok;
  });
  EXPECT_EQ(n, 300);
  const auto& e = p->agents()[0];
  // The 1700 refusals gave back everything they took from the agent.
  EXPECT_EQ(e.state->buckets.requests.available(e.limits.requests, t0), 700u);
  EXPECT_EQ(e.state->buckets.requests_per_hour.available(e.limits.requests_per_hour, t0), 4'700u);
}

TEST(RateLimitThreads, ConcurrencyCapIsNeverExceeded) {
  registry reg;
  policy::model::rate ar;
  ar.concurrent = 3;
  policy::model::rate rr;
  rr.concurrent = 2;
  const auto p = reg.bind({agent("a", ar, {rule("r", rr), rule("s")})});
  std::atomic<int> agent_now{0}, rule_now{0}, agent_max{0}, rule_max{0};
  const auto raise = [](std::atomic<int>& max, int v) {
    int m = max.load();
    while (v > m && !max.compare_exchange_weak(m, v)) {
    }
  };
  const long n = run_together([&](int t) {
    long ok = 0;
    for (int i = 0; i < 20'000; ++i) {
      const std::size_t rule = (t + i) % 2 == 0 ? 0 : 1;
      admission a = p->admit(0, rule, t0);
      if (!a.admitted()) continue;
      ++ok;
      raise(agent_max, ++agent_now);
      if (rule == 0) raise(rule_max, ++rule_now);
      if (rule == 0) --rule_now;
      --agent_now;
    }
    return ok;
  });
  EXPECT_GT(n, 0);
  EXPECT_LE(agent_max.load(), 3);
  EXPECT_LE(rule_max.load(), 2);
  EXPECT_EQ(p->agents()[0].state->buckets.gate.in_flight(), 0u);
  EXPECT_EQ(p->agents()[0].rules[0].state->gate.in_flight(), 0u);
}

TEST(RateLimitThreads, BreakerTripsOnce) {
  breaker b;
  const breaker_params bp{100, 10 * s, 60 * s};
  const long trips = run_together([&](int) {
    long n = 0;
    for (int i = 0; i < 1'000; ++i)
      n += b.record_failure(bp, t0) ? 1 : 0;
    return n;
  });
  EXPECT_EQ(trips, 1);
  EXPECT_EQ(b.check(t0), t0 + 60 * s);
}

TEST(RateLimitThreads, StopWhileAdmitting) {
  registry reg;
  const auto p = reg.bind({agent("a", per_second(1'000'000, 1'000'000))});
  std::atomic<bool> stopped{false};
  const long after = run_together([&](int t) {
    if (t == 0) {
      reg.stop("a");
      stopped = true;
      return 0L;
    }
    long refused_after_stop = 0;
    for (int i = 0; i < 10'000; ++i) {
      const bool was_stopped = stopped.load();
      const auto a = p->admit(0, plan::no_rule, t0);
      // Once the stop is visible to this thread, nothing more gets in.
      if (was_stopped) {
        refused_after_stop += a.admitted() ? 0 : 1;
        EXPECT_EQ(a.error, core::errc::agent_stopped);
      }
    }
    return refused_after_stop;
  });
  EXPECT_GE(after, 0);
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).error, core::errc::agent_stopped);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
