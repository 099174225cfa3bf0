#include "filters/rate_limit/plan.hpp"

#include "rate_limit_test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <vector>

namespace airlock::filters::rate_limit {
namespace {

using core::errc;
using namespace test;

TEST(RateLimitPlan, NoLimitsAdmitsWithoutTickets) {
  registry reg;
  const auto p = reg.bind({agent("coder", {}, {rule("api"), rule("web")})});
  EXPECT_FALSE(p->limits_anything());
  for (int i = 0; i < 1'000; ++i) {
    const admission a = p->admit(0, 1, t0);
    ASSERT_TRUE(a.admitted());
    EXPECT_EQ(a.retry_after_seconds, 0u);
    EXPECT_TRUE(a.limit.empty());
    EXPECT_FALSE(a.agent_slot.holds());
    EXPECT_FALSE(a.rule_slot.holds());
  }
  EXPECT_EQ(p->throttle(0, 0, direction::download, 1 << 30, t0), 0);
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).error, errc::ok);
}

TEST(RateLimitPlan, AgentBucketRefusesWithRetryAfterAndName) {
  registry reg;
  const auto p = reg.bind({agent("coder", per_minute(600, 5), {rule("api")})});
  EXPECT_TRUE(p->limits_anything());
  EXPECT_EQ(admit_all(*p, 0, 0, t0), 5);
  const admission a = p->admit(0, 0, t0);
  EXPECT_EQ(a.error, errc::rate_limited);
  EXPECT_EQ(a.retry_after_ns, 100 * ms);
  EXPECT_EQ(a.retry_after_seconds, 1u);  // rounded up
  EXPECT_EQ(a.limit, "agent coder requests_per_minute=600");
  EXPECT_FALSE(a.agent_slot.holds());
  // The agent's bucket is shared by all its rules.
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).error, errc::rate_limited);
  EXPECT_EQ(admit_all(*p, 0, 0, t0 + 100 * ms), 1);
}

TEST(RateLimitPlan, RuleBucketIsPerAgentAndNamed) {
  registry reg;
  const auto p = reg.bind({agent("coder", {}, {rule("web"), rule("api", per_second(5, 2))}),
                           agent("bot", {}, {rule("api", per_second(5, 2))})});
  EXPECT_EQ(admit_all(*p, 0, 1, t0), 2);
  const admission a = p->admit(0, 1, t0);
  EXPECT_EQ(a.error, errc::rate_limited);
  EXPECT_EQ(a.limit, "rule api (agent coder) requests_per_second=5");
  EXPECT_EQ(a.retry_after_ns, 200 * ms);
  // Another rule of the same agent, and the same rule for another agent, are not affected.
  EXPECT_EQ(admit_all(*p, 0, 0, t0, 50), 50);
  EXPECT_EQ(admit_all(*p, 1, 0, t0), 2);
}

TEST(RateLimitPlan, RetryAfterSecondsRoundsUp) {
  registry reg;
  policy::model::rate r;
  r.requests = 2;
  r.per = std::chrono::milliseconds(2'500);  // one every 1.25s
  r.burst = 1;
  const auto p = reg.bind({agent("a", r)});
  ASSERT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
  admission a = p->admit(0, plan::no_rule, t0);
  EXPECT_EQ(a.retry_after_seconds, 2u);
  EXPECT_EQ(a.limit, "agent a requests=2/2500ms");  // no key from the file: spelled out
  a = p->admit(0, plan::no_rule, t0 + 1'250 * ms - 1);
  EXPECT_EQ(a.retry_after_ns, 1);
  EXPECT_EQ(a.retry_after_seconds, 1u);  // at least 1 when refused with a time
}

TEST(RateLimitPlan, RefusedAdmissionConsumesNothing) {
  // Everything the agent and the rule limit, with the rule's bucket the first to run out.
  policy::model::rate ar = per_second(100, 3);
  ar.requests_per_hour = 1'000;
  ar.concurrent = 10;
  policy::model::rate rr = per_second(1, 1);
  rr.requests_per_hour = 1'000;
  rr.concurrent = 10;
  registry reg;
  const auto p = reg.bind({agent("coder", ar, {rule("api", rr), rule("web")})});
  ASSERT_TRUE(p->admit(0, 0, t0).admitted());
  for (int i = 0; i < 50; ++i) {
    const admission a = p->admit(0, 0, t0);
    ASSERT_EQ(a.error, errc::rate_limited);
    EXPECT_EQ(a.limit, "rule api (agent coder) requests_per_second=1");
  }
  // The agent's bucket gave back what the refused ones took: 2 of its 3 are left.
  EXPECT_EQ(admit_all(*p, 0, 1, t0), 2);
  // So did the quotas (999 of the agent's hour are left, 999 of the rule's).
  const auto& e = p->agents()[0];
  EXPECT_EQ(e.state->buckets.requests_per_hour.available(e.limits.requests_per_hour, t0), 997u);
  EXPECT_EQ(e.rules[0].state->requests_per_hour.available(e.rules[0].limits.requests_per_hour, t0),
            999u);
  // And the concurrency slots.
  EXPECT_EQ(e.state->buckets.gate.in_flight(), 0u);
  EXPECT_EQ(e.rules[0].state->gate.in_flight(), 0u);
}

TEST(RateLimitPlan, ConcurrencyHeldForTheLifeOfTheAdmission) {
  policy::model::rate ar;
  ar.concurrent = 3;
  policy::model::rate rr;
  rr.concurrent = 2;
  registry reg;
  const auto p = reg.bind({agent("coder", ar, {rule("api", rr), rule("web")})});
  std::vector<admission> held;
  held.push_back(p->admit(0, 0, t0));
  held.push_back(p->admit(0, 0, t0));
  for (const auto& a : held) {
    ASSERT_TRUE(a.admitted());
    EXPECT_TRUE(a.agent_slot.holds());
    EXPECT_TRUE(a.rule_slot.holds());
  }
  admission a = p->admit(0, 0, t0);
  EXPECT_EQ(a.error, errc::concurrency_limited);
  EXPECT_EQ(a.limit, "rule api (agent coder) concurrent=2");
  EXPECT_EQ(a.retry_after_seconds, 0u);
  held.push_back(p->admit(0, 1, t0));  // other rule: only the agent's cap applies
  ASSERT_TRUE(held.back().admitted());
  EXPECT_FALSE(held.back().rule_slot.holds());
  a = p->admit(0, 1, t0);
  EXPECT_EQ(a.error, errc::concurrency_limited);
  EXPECT_EQ(a.limit, "agent coder concurrent=3");
  EXPECT_EQ(p->agents()[0].state->buckets.gate.in_flight(), 3u);
  held.erase(held.begin());  // one request ends
  EXPECT_TRUE(p->admit(0, 0, t0).admitted());
  held.clear();
  EXPECT_EQ(p->agents()[0].state->buckets.gate.in_flight(), 0u);
  EXPECT_EQ(p->agents()[0].rules[0].state->gate.in_flight(), 0u);
}

TEST(RateLimitPlan, SkippingSlotsStillRates) {
  // Requests inside an intercepted tunnel: the tunnel holds the concurrency slot, each request
  // is still rated, and so is the CONNECT (it is a request too).
  policy::model::rate ar;
  ar.concurrent = 1;
  ar.requests = 3;
  registry reg;
  const auto p = reg.bind({agent("coder", ar, {rule("api")})});
  const admission tunnel = p->admit(0, 0, t0);
  ASSERT_TRUE(tunnel.admitted());
  EXPECT_TRUE(tunnel.agent_slot.holds());
  EXPECT_EQ(p->admit(0, 0, t0).error, errc::concurrency_limited);
  const plan::slots inside{.agent = false, .rule = false};
  const admission inner = p->admit(0, 0, t0, inside);
  ASSERT_TRUE(inner.admitted());
  EXPECT_FALSE(inner.agent_slot.holds());
  EXPECT_EQ(p->agents()[0].state->buckets.gate.in_flight(), 1u);
  // The tunnel took one request token: two more fit in the bucket of three.
  EXPECT_TRUE(p->admit(0, 0, t0, inside).admitted());
  EXPECT_EQ(p->admit(0, 0, t0, inside).error, errc::rate_limited);
}

TEST(RateLimitPlan, SlotsTakenOneByOne) {
  // A request inside another rule's tunnel takes that rule's slot and not the agent's again;
  // an HTTP/2 stream beside others takes both.
  policy::model::rate agent_rate;
  agent_rate.concurrent = 2;
  policy::model::rate rule_rate;
  rule_rate.concurrent = 1;
  registry reg;
  const auto p = reg.bind({agent("coder", agent_rate, {rule("wide"), rule("narrow", rule_rate)})});
  const admission tunnel = p->admit(0, 0, t0);  // the CONNECT, allowed by "wide"
  ASSERT_TRUE(tunnel.admitted());
  const admission first = p->admit(0, 1, t0, {.agent = false, .rule = true});
  ASSERT_TRUE(first.admitted());
  EXPECT_FALSE(first.agent_slot.holds());
  EXPECT_TRUE(first.rule_slot.holds());
  const admission second = p->admit(0, 1, t0, {.agent = false, .rule = true});
  EXPECT_EQ(second.error, errc::concurrency_limited);
  EXPECT_NE(second.limit.find("narrow"), std::string::npos) << second.limit;
  const admission beside = p->admit(0, 0, t0, {.agent = true, .rule = true});
  ASSERT_TRUE(beside.admitted());
  EXPECT_EQ(p->agents()[0].state->buckets.gate.in_flight(), 2u);
  EXPECT_EQ(p->admit(0, 0, t0, {.agent = true, .rule = true}).error, errc::concurrency_limited);
}

TEST(RateLimitPlan, AdmissionOrder) {
  policy::model::rate ar = per_second(1, 1);
  ar.concurrent = 1;
  ar.requests_per_hour = 1;
  ar.bytes_per_hour = 1'000;
  policy::model::rate rr = per_second(1, 1);
  rr.concurrent = 1;
  rr.requests_per_hour = 1;
  rr.bytes_per_hour = 1'000;
  registry reg;
  const auto p =
      reg.bind({agent("a", ar, {rule("r", rr)},
                      breaker_of(1, std::chrono::seconds(10), std::chrono::seconds(60)))});
  admission held = p->admit(0, 0, t0);
  ASSERT_TRUE(held.admitted());

  // Everything is now exhausted; each check is lifted in turn to reveal the next.
  const auto& e = p->agents()[0];
  ASSERT_FALSE(p->record_failure(0, t0));
  ASSERT_TRUE(p->record_failure(0, t0));
  reg.stop("a");
  EXPECT_EQ(p->admit(0, 0, t0).error, errc::agent_stopped);
  EXPECT_EQ(p->admit(0, 0, t0).limit, "agent a stopped");
  e.state->breaker.resume();
  admission a = p->admit(0, 0, t0 + s);
  EXPECT_EQ(a.error, errc::agent_suspended);
  EXPECT_EQ(a.retry_after_seconds, 59u);
  EXPECT_EQ(a.limit, "agent a breaker max_failures=1");
  e.state->breaker.clear();
  EXPECT_EQ(p->admit(0, 0, t0).limit, "agent a concurrent=1");
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).limit, "agent a concurrent=1");
  held.agent_slot.reset();
  EXPECT_EQ(p->admit(0, 0, t0).limit, "rule r (agent a) concurrent=1");
  held.rule_slot.reset();
  a = p->admit(0, 0, t0);
  EXPECT_EQ(a.error, errc::quota_exceeded);
  EXPECT_EQ(a.limit, "agent a requests_per_hour=1");
  EXPECT_EQ(a.retry_after_seconds, 3'600u);
  e.state->buckets.requests_per_hour.reset();
  a = p->admit(0, 0, t0);
  EXPECT_EQ(a.limit, "rule r (agent a) requests_per_hour=1");
  e.rules[0].state->requests_per_hour.reset();
  // 1500 bytes went through: the byte quotas are in debt.
  EXPECT_EQ(p->throttle(0, 0, direction::upload, 1'500, t0), 0);
  a = p->admit(0, 0, t0);
  EXPECT_EQ(a.error, errc::quota_exceeded);
  EXPECT_EQ(a.limit, "agent a bytes_per_hour=1000");
  EXPECT_EQ(a.retry_after_seconds, 1'804u);  // half an hour of debt plus one byte (3.6s)
  e.state->buckets.bytes_per_hour.reset();
  EXPECT_EQ(p->admit(0, 0, t0).limit, "rule r (agent a) bytes_per_hour=1000");
  e.rules[0].state->bytes_per_hour.reset();
  a = p->admit(0, 0, t0);
  EXPECT_EQ(a.error, errc::rate_limited);
  EXPECT_EQ(a.limit, "agent a requests_per_second=1");
  e.state->buckets.requests.reset();
  EXPECT_EQ(p->admit(0, 0, t0).limit, "rule r (agent a) requests_per_second=1");
  e.rules[0].state->requests.reset();
  EXPECT_TRUE(p->admit(0, 0, t0).admitted());
}

TEST(RateLimitPlan, ThrottleTakesTheSlowerBucketAndChargesQuotas) {
  policy::model::rate ar;
  ar.upload_bytes_per_second = 1'000;
  ar.download_bytes_per_second = 10'000;
  ar.bytes_per_hour = 100'000;
  policy::model::rate rr;
  rr.download_bytes_per_second = 2'000;
  registry reg;
  const auto p = reg.bind({agent("a", ar, {rule("r", rr), rule("plain")})});
  // Upload: only the agent's bucket (1000/s, 1s burst).
  EXPECT_EQ(p->throttle(0, 0, direction::upload, 1'000, t0), 0);
  EXPECT_EQ(p->throttle(0, 0, direction::upload, 500, t0), 500 * ms);
  // Download: the rule's 2000/s is slower than the agent's 10000/s.
  EXPECT_EQ(p->throttle(0, 0, direction::download, 4'000, t0), 1 * s);
  EXPECT_EQ(p->throttle(0, 1, direction::download, 10'000, t0), 400 * ms);  // agent only
  EXPECT_EQ(p->throttle(0, plan::no_rule, direction::download, 0, t0), 0);
  // Every byte counted against the hourly quota: 1500 + 14000 of 100000.
  const auto& e = p->agents()[0];
  EXPECT_EQ(e.state->buckets.bytes_per_hour.available(e.limits.bytes_per_hour, t0), 84'500u);
  // Out-of-range indices are harmless.
  EXPECT_EQ(p->throttle(9, 0, direction::upload, 1, t0), 0);
  EXPECT_EQ(p->throttle(0, 9, direction::upload, 1, t0), 501 * ms);  // agent only
}

TEST(RateLimitPlan, BreakerTripsAndRecovers) {
  registry reg;
  const auto p = reg.bind({agent(
      "a", {}, {rule("r")}, breaker_of(2, std::chrono::seconds(10), std::chrono::minutes(5)))});
  EXPECT_FALSE(p->record_failure(0, t0));
  EXPECT_FALSE(p->record_failure(0, t0));
  EXPECT_TRUE(p->admit(0, 0, t0).admitted());
  EXPECT_TRUE(p->record_failure(0, t0 + s));
  const admission a = p->admit(0, 0, t0 + s);
  EXPECT_EQ(a.error, errc::agent_suspended);
  EXPECT_EQ(a.retry_after_seconds, 300u);
  EXPECT_EQ(a.retry_after_ns, 300 * s);
  EXPECT_TRUE(p->admit(0, 0, t0 + 301 * s).admitted());
  EXPECT_FALSE(p->record_failure(9, t0));
}

TEST(RateLimitPlan, HugeDurationsSaturate) {
  constexpr auto forever = std::chrono::milliseconds::max();
  constexpr std::int64_t early = std::numeric_limits<std::int64_t>::min() / 2;
  registry reg;
  const auto p = reg.bind({agent("a", {}, {}, breaker_of(1, forever, forever))});
  EXPECT_EQ(p->agents()[0].breaker.cooldown_ns, std::numeric_limits<std::int64_t>::max());
  ASSERT_FALSE(p->record_failure(0, early));
  ASSERT_TRUE(p->record_failure(0, early));
  const admission a = p->admit(0, plan::no_rule, early);
  EXPECT_EQ(a.error, errc::agent_suspended);
  EXPECT_EQ(a.retry_after_seconds, std::numeric_limits<std::uint32_t>::max());
  const auto st = reg.status(std::numeric_limits<std::int64_t>::min());
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].suspended_seconds_left, std::numeric_limits<std::uint32_t>::max());
}

TEST(RateLimitPlan, BadIndicesFailClosed) {
  registry reg;
  const auto p = reg.bind({agent("a", {}, {rule("r")})});
  EXPECT_EQ(p->admit(1, 0, t0).error, errc::internal_error);
  EXPECT_EQ(p->admit(0, 1, t0).error, errc::internal_error);
  EXPECT_EQ(p->admit(plan::npos, 0, t0).error, errc::internal_error);
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
}

TEST(RateLimitPlan, LookupsByName) {
  registry reg;
  const auto p = reg.bind({agent("a", {}, {rule("r"), rule("q")}), agent("b")});
  EXPECT_EQ(p->agent_index("b"), 1u);
  EXPECT_EQ(p->agent_index("zz"), plan::npos);
  EXPECT_EQ(p->rule_position(0, "q"), 1u);
  EXPECT_EQ(p->rule_position(0, "zz"), plan::no_rule);
  EXPECT_EQ(p->rule_position(5, "q"), plan::no_rule);
  EXPECT_EQ(p->rule_position(0, static_cast<const policy::compiled_rule*>(nullptr)), plan::no_rule);
  EXPECT_EQ(p->agent_name(1), "b");
  EXPECT_EQ(p->snapshot(), nullptr);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
