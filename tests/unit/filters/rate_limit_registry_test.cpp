#include "filters/rate_limit/registry.hpp"

#include "rate_limit_test_util.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace airlock::filters::rate_limit {
namespace {

using core::errc;
using namespace test;

TEST(RateLimitRegistry, StateSurvivesRebindWhenNamesStay) {
  registry reg;
  auto p1 = reg.bind({agent("coder", per_second(10, 2), {rule("api", per_second(1, 1))})});
  ASSERT_EQ(admit_all(*p1, 0, 0, t0), 1);
  ASSERT_EQ(admit_all(*p1, 0, plan::no_rule, t0), 1);
  // Same names, another order and another agent first: the buckets are still empty.
  auto p2 = reg.bind({agent("other"), agent("coder", per_second(10, 2),
                                            {rule("web"), rule("api", per_second(1, 1))})});
  EXPECT_EQ(p2->admit(1, 1, t0).error, errc::rate_limited);
  EXPECT_EQ(p2->admit(1, plan::no_rule, t0).error, errc::rate_limited);
  EXPECT_EQ(p2->agents()[1].state, p1->agents()[0].state);
  EXPECT_EQ(p2->agents()[1].rules[1].state, p1->agents()[0].rules[0].state);
  // Both plans act on the same state while the old one is still in use.
  EXPECT_EQ(admit_all(*p1, 0, plan::no_rule, t0 + 100 * ms), 1);
  EXPECT_EQ(admit_all(*p2, 1, plan::no_rule, t0 + 100 * ms), 0);
}

TEST(RateLimitRegistry, NewNumbersActOnTheKeptState) {
  registry reg;
  auto p1 = reg.bind({agent("a", per_second(10, 5))});
  ASSERT_EQ(admit_all(*p1, 0, plan::no_rule, t0), 5);  // TAT is t0 + 500ms
  // The reload raises the burst to 10 (still 100ms each): 5 more fit at once.
  auto p2 = reg.bind({agent("a", per_second(10, 10))});
  EXPECT_EQ(admit_all(*p2, 0, plan::no_rule, t0), 5);
  // And lowering it leaves the agent waiting for the debt against the new numbers.
  auto p3 = reg.bind({agent("a", per_second(1, 1))});
  const admission a = p3->admit(0, plan::no_rule, t0);
  EXPECT_EQ(a.error, errc::rate_limited);
  EXPECT_EQ(a.retry_after_ns, 1 * s);  // TAT t0+1s, plus 1s for one, minus the 1s burst
}

TEST(RateLimitRegistry, StateIsResetWhenANameGoesAway) {
  registry reg;
  auto p1 = reg.bind({agent("a", per_second(1, 1), {rule("r", per_second(1, 1))})});
  ASSERT_EQ(admit_all(*p1, 0, 0, t0), 1);
  // The agent leaves the policy and comes back: a fresh bucket.
  reg.bind({agent("b")});
  auto p3 = reg.bind({agent("a", per_second(1, 1), {rule("r", per_second(1, 1))})});
  EXPECT_NE(p3->agents()[0].state, p1->agents()[0].state);
  EXPECT_EQ(admit_all(*p3, 0, 0, t0), 1);
  // A rule renamed is another key; a rule that loses its `rate` loses its state.
  auto p4 = reg.bind({agent("a", {}, {rule("r2", per_second(1, 1)), rule("r")})});
  EXPECT_EQ(p4->agents()[0].rules[1].state, nullptr);
  EXPECT_EQ(admit_all(*p4, 0, 0, t0), 1);
  auto p5 = reg.bind({agent("a", {}, {rule("r", per_second(1, 1))})});
  EXPECT_EQ(admit_all(*p5, 0, 0, t0), 1);
  // The old plans still work on the states they hold.
  EXPECT_EQ(p1->admit(0, 0, t0).error, errc::rate_limited);
}

TEST(RateLimitRegistry, StopAndResume) {
  registry reg;
  auto p = reg.bind({agent("coder"), agent("bot")});
  EXPECT_FALSE(reg.stop("nobody"));
  EXPECT_FALSE(reg.resume("nobody"));
  EXPECT_TRUE(reg.stop("coder"));
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).error, errc::agent_stopped);
  EXPECT_EQ(p->admit(0, plan::no_rule, t0).retry_after_seconds, 0u);
  EXPECT_TRUE(p->admit(1, plan::no_rule, t0).admitted());
  EXPECT_EQ(reg.stopped(), std::vector<std::string>{"coder"});
  EXPECT_TRUE(reg.resume("coder"));
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
  EXPECT_TRUE(reg.stopped().empty());
}

// Whoever else holds something of an agent (its held requests) hears of every stop: the
// admin port's, or one from another replica (fleet_control calls stop() too).
TEST(RateLimitRegistry, AStopIsToldToTheListener) {
  registry reg;
  reg.bind({agent("coder"), agent("bot")});
  std::vector<std::string> told;
  reg.set_stop_listener([&](std::string_view name) { told.emplace_back(name); });
  EXPECT_FALSE(reg.is_stopped("coder"));
  EXPECT_FALSE(reg.stop("nobody"));
  EXPECT_TRUE(reg.stop("coder"));
  EXPECT_TRUE(reg.is_stopped("coder"));
  EXPECT_FALSE(reg.is_stopped("bot"));
  EXPECT_TRUE(reg.resume("coder"));
  EXPECT_FALSE(reg.is_stopped("coder"));
  EXPECT_EQ(told, std::vector<std::string>{"coder"});
  // Stopped and gone from the policy: still stopped.
  ASSERT_TRUE(reg.stop("coder"));
  reg.bind({agent("bot")});
  EXPECT_TRUE(reg.is_stopped("coder"));
}

TEST(RateLimitRegistry, StoppedSurvivesRebindAndRemoval) {
  registry reg;
  reg.bind({agent("coder"), agent("bot")});
  ASSERT_TRUE(reg.stop("coder"));
  auto p2 = reg.bind({agent("bot"), agent("coder")});
  EXPECT_EQ(p2->admit(1, plan::no_rule, t0).error, errc::agent_stopped);
  // Removed from the policy: remembered as stopped, and stopped again when it comes back.
  reg.bind({agent("bot")});
  EXPECT_EQ(reg.stopped(), std::vector<std::string>{"coder"});
  EXPECT_FALSE(reg.stop("coder"));  // not in the policy
  auto p4 = reg.bind({agent("coder"), agent("bot")});
  EXPECT_EQ(p4->admit(0, plan::no_rule, t0).error, errc::agent_stopped);
  // A remembered name can be resumed (forgotten) while it is away.
  reg.bind({agent("bot")});
  EXPECT_TRUE(reg.resume("coder"));
  EXPECT_TRUE(reg.stopped().empty());
  auto p6 = reg.bind({agent("coder")});
  EXPECT_TRUE(p6->admit(0, plan::no_rule, t0).admitted());
}

TEST(RateLimitRegistry, ResumeLiftsASuspension) {
  registry reg;
  auto p = reg.bind(
      {agent("a", {}, {}, breaker_of(1, std::chrono::seconds(10), std::chrono::minutes(5)))});
  ASSERT_FALSE(p->record_failure(0, t0));
  ASSERT_TRUE(p->record_failure(0, t0));
  ASSERT_EQ(p->admit(0, plan::no_rule, t0).error, errc::agent_suspended);
  // A suspension also survives a reload.
  p = reg.bind(
      {agent("a", {}, {}, breaker_of(1, std::chrono::seconds(10), std::chrono::minutes(5)))});
  ASSERT_EQ(p->admit(0, plan::no_rule, t0).error, errc::agent_suspended);
  EXPECT_TRUE(reg.resume("a"));
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
}

TEST(RateLimitRegistry, Status) {
  registry reg;
  EXPECT_TRUE(reg.status(t0).empty());
  EXPECT_EQ(reg.current(), nullptr);
  policy::model::rate r = per_second(10, 4);
  r.concurrent = 5;
  auto p = reg.bind(
      {agent("coder", r, {}, breaker_of(1, std::chrono::seconds(10), std::chrono::seconds(90))),
       agent("bot"), agent("gone")});
  EXPECT_EQ(reg.current(), p);
  admission held = p->admit(0, plan::no_rule, t0);
  ASSERT_TRUE(held.admitted());
  (void)p->record_failure(0, t0);
  (void)p->record_failure(0, t0);
  reg.stop("gone");
  p = reg.bind(
      {agent("coder", r, {}, breaker_of(1, std::chrono::seconds(10), std::chrono::seconds(90))),
       agent("bot")});
  const auto st = reg.status(t0 + 500 * ms);
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].name, "coder");
  EXPECT_TRUE(st[0].in_policy);
  EXPECT_FALSE(st[0].stopped);
  EXPECT_EQ(st[0].suspended_until_ns, t0 + 90 * s);
  EXPECT_EQ(st[0].suspended_seconds_left, 90u);  // 89.5s, rounded up
  EXPECT_EQ(st[0].in_flight, 1u);
  EXPECT_EQ(st[0].concurrent, 5u);
  EXPECT_EQ(st[0].requests_available, 4u);  // one taken, 0.5s refilled (capped at 4)
  EXPECT_EQ(st[1].name, "bot");
  EXPECT_EQ(st[1].suspended_until_ns, 0);
  EXPECT_EQ(st[1].in_flight, 0u);
  EXPECT_EQ(st[2].name, "gone");
  EXPECT_FALSE(st[2].in_policy);
  EXPECT_TRUE(st[2].stopped);
}

// What the console shows of an agent's hourly quotas: what is left of each one set, nothing
// for one that is not.
TEST(RateLimitRegistry, StatusSaysWhatIsLeftOfTheHourlyQuotas) {
  registry reg;
  policy::model::rate r;
  r.requests_per_hour = 10;
  r.bytes_per_hour = 1000;
  auto p = reg.bind({agent("coder", r), agent("bot")});
  for (int i = 0; i < 3; ++i) {
    admission a = p->admit(0, plan::no_rule, t0);
    ASSERT_TRUE(a.admitted());
  }
  const auto st = reg.status(t0);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].requests_per_hour_left, std::optional<std::uint64_t>(7));
  EXPECT_EQ(st[0].bytes_per_hour_left, std::optional<std::uint64_t>(1000));
  EXPECT_EQ(st[1].requests_per_hour_left, std::nullopt);
  EXPECT_EQ(st[1].bytes_per_hour_left, std::nullopt);
}

TEST(RateLimitRegistry, TicketsOutliveRegistryAndPlan) {
  admission held;
  std::weak_ptr<const plan> weak;
  {
    policy::model::rate r;
    r.concurrent = 1;
    registry reg;
    auto p = reg.bind({agent("a", r, {rule("x", r)})});
    weak = p;
    held = p->admit(0, 0, t0);
    ASSERT_TRUE(held.admitted());
    ASSERT_TRUE(held.agent_slot.holds());
    ASSERT_TRUE(held.rule_slot.holds());
  }
  EXPECT_TRUE(weak.expired());
  held = admission{};  // frees the slots of states nobody else holds (AddressSanitizer checks)
  EXPECT_FALSE(held.agent_slot.holds());
}

TEST(RateLimitRegistry, DuplicateNamesShareState) {
  registry reg;
  auto p = reg.bind({agent("a", {}, {rule("r", per_second(1, 1)), rule("r", per_second(1, 1))})});
  ASSERT_EQ(p->agents()[0].rules[0].state, p->agents()[0].rules[1].state);
  EXPECT_TRUE(p->admit(0, 0, t0).admitted());
  EXPECT_EQ(p->admit(0, 1, t0).error, errc::rate_limited);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
