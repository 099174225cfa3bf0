// The kill switch and what is held (filters/approval/registry.hpp): a stop ends the agent's
// holds and access requests, each with one record, and a verdict that reaches a session after
// the stop is refused there (pending::settle), however it was decided.
#include "approval_test_util.hpp"
#include "filters/approval/registry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace airlock::filters::approval {
namespace {

using namespace std::chrono_literals;

using test::get;

struct recorded {
  std::vector<std::string> events;
  void attach(registry& reg) {
    reg.set_event_sink([this](std::string_view event, std::uint64_t id, const request_info& r,
                              std::string_view outcome, std::string_view) {
      events.push_back(std::string(event) + " " + std::to_string(id) + " " + r.agent + " " +
                       std::string(outcome));
    });
  }
};

decision approve() {
  decision d;
  d.approve = true;
  d.by = "op";
  return d;
}

TEST(ApprovalStop, AStopEndsTheAgentsHoldsAndAccessRequestsOnce) {
  registry reg;
  recorded rec;
  rec.attach(reg);
  std::string why, message;
  std::optional<verdict> waiting, late, other;
  auto held = reg.hold(get("a", "x.test"), {}, 10s, why);  // 1: its session waits
  held->start([&](verdict v) { waiting = std::move(v); });
  auto not_yet = reg.hold(get("a", "y.test"), {}, 10s, why);  // 2: its session has not begun
  auto others = reg.hold(get("b", "x.test"), {}, 10s, why);   // 3: another agent's
  others->start([&](verdict v) { other = std::move(v); });
  const auto access = reg.ask(get("a", "z.test", ""), {}, 10s, why);  // 4
  ASSERT_EQ(access, 4u) << why;
  rec.events.clear();

  EXPECT_EQ(reg.stop_agent("a"), 3u);
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->reason, core::errc::agent_stopped);
  not_yet->start([&](verdict v) { late = std::move(v); });
  ASSERT_TRUE(late);
  EXPECT_EQ(late->reason, core::errc::agent_stopped);
  EXPECT_FALSE(other);  // b is not stopped
  EXPECT_EQ(reg.held_count(), 1u);
  EXPECT_EQ(reg.access_outcome(access, "a"), "refused");
  EXPECT_EQ(rec.events, (std::vector<std::string>{"agent_stopped 1 a agent_stopped",
                                                  "agent_stopped 2 a agent_stopped",
                                                  "agent_stopped 4 a agent_stopped"}));
  // Nothing of a's is left to approve, and nothing ends twice.
  for (std::uint64_t id : {1u, 2u, 4u})
    EXPECT_FALSE(reg.decide(id, approve(), message)) << id;
  held->cancel();
  EXPECT_EQ(reg.stop_agent("a"), 0u);
  EXPECT_EQ(rec.events.size(), 3u);
  others->cancel();
}

TEST(ApprovalStop, AStopRevokesTheAgentsGrantsAndRefusesLateOnes) {
  registry reg;
  std::atomic<bool> stopped{false};
  reg.set_stop_check([&](std::string_view agent) { return agent == "a" && stopped.load(); });
  std::vector<std::string> revoked;
  reg.set_revoke_hook([&](const std::string& agent) { revoked.push_back(agent); });
  auto grant_for = [](std::string agent) {
    grant g;
    g.agent = std::move(agent);
    g.host = "x.test";
    g.port = 443;
    g.expires = std::chrono::system_clock::now() + 1h;
    return g;
  };
  reg.add_grant(grant_for("a"));
  reg.add_grant(grant_for("b"));
  ASSERT_TRUE(reg.granted(get("a", "x.test")));
  stopped = true;
  reg.stop_agent("a");
  EXPECT_EQ(revoked, std::vector<std::string>{"a"});  // the fleet drops its kept copies too
  EXPECT_FALSE(reg.granted(get("a", "x.test")));
  EXPECT_TRUE(reg.granted(get("b", "x.test")));  // b is not stopped
  // A grant from another replica that crossed the stop is not kept.
  reg.add_grant(grant_for("a"));
  stopped = false;  // resumed: it starts from the policy
  EXPECT_FALSE(reg.granted(get("a", "x.test")));
}

TEST(ApprovalStop, AShutdownRecordsEachAccessRequestStillPending) {
  registry reg;
  recorded rec;
  rec.attach(reg);
  std::string why;
  const auto pending_one = reg.ask(get("a", "z.test", ""), {}, 10s, why);
  const auto past_due = reg.ask(get("a", "y.test", ""), {}, 0ms, why);
  ASSERT_TRUE(pending_one && past_due) << why;
  rec.events.clear();
  reg.shutdown();
  EXPECT_EQ(rec.events, (std::vector<std::string>{
                            "timed_out " + std::to_string(past_due) + " a approval_timeout",
                            "shutting_down " + std::to_string(pending_one) + " a shutting_down"}));
}

TEST(ApprovalStop, AnApprovalThatReachesTheSessionAfterTheStopIsRefusedThere) {
  registry reg;
  std::atomic<bool> stopped{false};
  reg.set_stop_check([&](std::string_view agent) { return agent == "a" && stopped.load(); });
  std::string why, message;
  std::optional<verdict> outcome;
  auto held = reg.hold(get("a", "x.test"), {}, 10s, why);
  held->start([&](verdict v) { outcome = std::move(v); });
  ASSERT_TRUE(reg.decide(1, approve(), message)) << message;
  ASSERT_TRUE(outcome && outcome->passes());
  EXPECT_TRUE(held->settle(*outcome).passes());  // not stopped: it goes on
  stopped = true;  // the stop came between the decision and the session taking it
  const auto taken = held->settle(*outcome);
  EXPECT_TRUE(taken.refused());
  EXPECT_EQ(taken.reason, core::errc::agent_stopped);
  // A refusal stays the refusal it was.
  const auto refusal = verdict::refuse(core::errc::approval_refused, "no");
  EXPECT_EQ(held->settle(refusal).reason, core::errc::approval_refused);
}

TEST(ApprovalStop, AGrantFromAnotherReplicaDoesNotReleaseAStoppedAgent) {
  registry reg;
  reg.set_stop_check([](std::string_view agent) { return agent == "a"; });
  std::string why;
  std::optional<verdict> outcome;
  auto held = reg.hold(get("a", "x.test"), {}, 10s, why);
  held->start([&](verdict v) { outcome = std::move(v); });
  grant g;
  g.agent = "a";
  g.host = "x.test";
  g.port = 443;
  g.expires = std::chrono::system_clock::now() + 1h;
  reg.add_grant(g);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(held->settle(*outcome).reason, core::errc::agent_stopped);
}

}  // namespace
}  // namespace airlock::filters::approval
