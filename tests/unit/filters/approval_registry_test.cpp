// The approvals registry (filters/approval/registry.hpp): holds and their outcomes, the bounds,
// grants and what they cover, access requests, the admin port's decision bodies, shutdown.
#include "approval_test_util.hpp"
#include "filters/approval/admin_api.hpp"
#include "filters/approval/registry.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <optional>

namespace airlock::filters::approval {
namespace {

using namespace std::chrono_literals;

using test::get;

// The outcome a session would get.
struct waiter {
  std::optional<verdict> outcome;
  std::shared_ptr<pending> p;
  void start() {
    p->start([this](verdict v) { outcome = std::move(v); });
  }
};

std::uint64_t first_pending_id(registry& r) {
  auto j = boost::json::parse(r.json());
  return j.at("pending").as_array().at(0).at("id").to_number<std::uint64_t>();
}

decision approve(scope s = scope::once) {
  decision d;
  d.approve = true;
  d.scope = s;
  d.by = "test";
  return d;
}

TEST(ApprovalRegistry, ApproveOnceLetsThatRequestGo) {
  registry reg;
  std::string why;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  ASSERT_TRUE(w.p) << why;
  w.start();
  EXPECT_FALSE(w.outcome);
  std::string message;
  ASSERT_TRUE(reg.decide(first_pending_id(reg), approve(), message)) << message;
  ASSERT_TRUE(w.outcome);
  EXPECT_TRUE(w.outcome->passes());
  EXPECT_FALSE(reg.granted(get("a", "x.test")));  // once: no grant
  EXPECT_EQ(reg.held_count(), 0u);
}

TEST(ApprovalRegistry, RefuseAndTimeout) {
  registry reg;
  std::string why, message;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  decision no;
  no.by = "op";
  ASSERT_TRUE(reg.decide(first_pending_id(reg), no, message));
  ASSERT_TRUE(w.outcome);
  EXPECT_EQ(w.outcome->reason, core::errc::approval_refused);
  EXPECT_FALSE(reg.decide(1, no, message));  // decided already

  waiter t{std::nullopt, reg.hold(get("a", "x.test"), {}, 3s, why)};
  t.start();
  EXPECT_EQ(t.p->wait_limit(60s), 3s);  // the hold's own timeout, not the session's
  const auto id = first_pending_id(reg);
  t.p->cancel();  // the session's wait timed out
  EXPECT_EQ(t.p->timed_out(3s).reason, core::errc::approval_timeout);
  EXPECT_EQ(reg.held_count(), 0u);
  EXPECT_FALSE(reg.decide(id, approve(), message));
}

TEST(ApprovalRegistry, AbandonedHoldLeavesPendingAndSaysWhy) {
  registry reg;
  std::vector<std::string> events;
  reg.set_event_sink([&](std::string_view event, std::uint64_t id, const request_info& r,
                         std::string_view outcome, std::string_view) {
    events.push_back(std::string(event) + " " + std::to_string(id) + " " + r.host + " " +
                     std::string(outcome));
  });
  std::string why, message;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  EXPECT_TRUE(w.p->watches_client());
  const auto id = first_pending_id(reg);
  w.p->abandon();  // the client closed its connection
  EXPECT_EQ(reg.held_count(), 0u);
  EXPECT_FALSE(reg.decide(id, approve(), message));
  EXPECT_EQ(events, (std::vector<std::string>{"held 1 x.test pending",
                                              "client_gone 1 x.test approval_abandoned"}));
}

TEST(ApprovalRegistry, BoundsPerAgentAndTotal) {
  registry reg;
  bounds b{2, 3};
  std::string why;
  std::vector<std::shared_ptr<pending>> held;
  held.push_back(reg.hold(get("a", "x.test"), b, 10s, why));
  held.push_back(reg.hold(get("a", "y.test"), b, 10s, why));
  EXPECT_FALSE(reg.hold(get("a", "z.test"), b, 10s, why));
  EXPECT_NE(why.find("max 2"), std::string::npos) << why;
  held.push_back(reg.hold(get("b", "x.test"), b, 10s, why));
  EXPECT_FALSE(reg.hold(get("c", "x.test"), b, 10s, why));
  EXPECT_NE(why.find("max 3"), std::string::npos) << why;
  EXPECT_EQ(reg.ask(get("c", "x.test"), b, 10s, why), 0u);  // access requests count too
  held[0]->cancel();
  EXPECT_TRUE(reg.hold(get("c", "x.test"), b, 10s, why));
}

TEST(ApprovalRegistry, AgentHostGrantCoversAndReleasesOthers) {
  registry reg;
  std::string why, message;
  waiter first{std::nullopt, reg.hold(get("a", "x.test", "/v1/a"), {}, 10s, why)};
  first.start();
  waiter second{std::nullopt, reg.hold(get("a", "x.test", "/v1/b"), {}, 10s, why)};
  second.start();
  waiter other{std::nullopt, reg.hold(get("a", "x.test", "/v2/c"), {}, 10s, why)};
  other.start();
  auto d = approve(scope::agent_host);
  d.duration = 1h;
  d.path_prefix = "/v1/";
  d.same_method = true;
  ASSERT_TRUE(reg.decide(first_pending_id(reg), d, message)) << message;
  EXPECT_TRUE(first.outcome && first.outcome->passes());
  EXPECT_TRUE(second.outcome && second.outcome->passes());  // covered by the new grant
  EXPECT_FALSE(other.outcome);                              // another path: still held
  EXPECT_TRUE(reg.granted(get("a", "x.test", "/v1/z")));
  EXPECT_FALSE(reg.granted(get("a", "x.test", "/v2/z")));
  EXPECT_FALSE(reg.granted(get("b", "x.test", "/v1/z")));  // another agent
  auto post = get("a", "x.test", "/v1/z");
  post.method = "POST";
  EXPECT_FALSE(reg.granted(post));
  auto tunnel = get("a", "x.test", "");
  tunnel.connect = true;
  tunnel.method = "CONNECT";
  EXPECT_FALSE(reg.granted(tunnel));  // a method and path are not visible in a CONNECT
}

TEST(ApprovalRegistry, ExpiredGrantCoversNothing) {
  grant g;
  g.agent = "a";
  g.host = "x.test";
  g.port = 443;
  const auto now = std::chrono::system_clock::now();
  g.expires = now + 1s;
  EXPECT_TRUE(g.covers(get("a", "x.test"), now));
  EXPECT_FALSE(g.covers(get("a", "x.test"), now + 2s));
}

TEST(ApprovalRegistry, ARequestWhoseHostOrMethodDlpRedactedIsNeverCovered) {
  // Its host reads "[REDACTED:dlp].x.test" for every name DLP redacted so: a grant made from
  // one such request must not stand for the others.
  grant g;
  g.agent = "a";
  g.host = "[REDACTED:dlp].x.test";
  g.port = 443;
  g.expires = std::chrono::system_clock::now() + 1h;
  auto r = get("a", "[REDACTED:dlp].x.test");
  const auto now = std::chrono::system_clock::now();
  EXPECT_TRUE(g.covers(r, now));
  r.redacted = true;
  EXPECT_FALSE(g.covers(r, now));
}

TEST(ApprovalRegistry, AnAgentHostApprovalOfARedactedRequestIsRefusedAndKeepsItHeld) {
  registry reg;
  std::string why, message;
  auto r = get("a", "[REDACTED:dlp].x.test");
  r.redacted = true;
  waiter w{std::nullopt, reg.hold(r, {}, 10s, why)};
  w.start();
  const auto id = first_pending_id(reg);
  EXPECT_FALSE(reg.decide(id, approve(scope::agent_host), message));
  EXPECT_NE(message.find("approve it once"), std::string::npos) << message;
  EXPECT_FALSE(w.outcome);  // still held, for a decision that can take effect
  ASSERT_TRUE(reg.decide(id, approve(scope::once), message)) << message;
  ASSERT_TRUE(w.outcome);
  EXPECT_TRUE(w.outcome->passes());
}

TEST(ApprovalRegistry, PermanentNeedsTheWriter) {
  registry reg;
  std::string why, message;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  const auto id = first_pending_id(reg);
  EXPECT_FALSE(reg.decide(id, approve(scope::permanent), message));
  EXPECT_FALSE(w.outcome);  // still held
  int written = 0;
  reg.set_permanent_writer([&](const request_info& r, bool, std::string& m) {
    ++written;
    m = "wrote " + r.host;
    return r.host == "x.test";
  });
  ASSERT_TRUE(reg.decide(id, approve(scope::permanent), message)) << message;
  EXPECT_EQ(written, 1);
  EXPECT_TRUE(w.outcome && w.outcome->passes());
  EXPECT_TRUE(reg.granted(get("a", "x.test")));
}

// The overlay was written and loaded while the held request ended (its client left, or its
// timeout): the rule is in force, so the decision says so and keeps the grant.
TEST(ApprovalRegistry, PermanentWrittenAsTheHoldEndedIsInForceAndSaysSo) {
  registry reg;
  std::vector<std::string> events;
  reg.set_event_sink(
      [&](std::string_view event, std::uint64_t, const request_info&, std::string_view outcome,
          std::string_view) { events.push_back(std::string(event) + " " + std::string(outcome)); });
  std::string why, message;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  const auto id = first_pending_id(reg);
  reg.set_permanent_writer([&](const request_info&, bool, std::string& m) {
    w.p->abandon();  // the client goes while the policy reloads
    m = "approved for good: approved-1 written";
    return true;
  });
  ASSERT_TRUE(reg.decide(id, approve(scope::permanent), message)) << message;
  EXPECT_NE(message.find("approved-1 written"), std::string::npos) << message;
  EXPECT_NE(message.find("ended before"), std::string::npos) << message;
  EXPECT_FALSE(w.outcome);                       // nobody was waiting any more
  EXPECT_TRUE(reg.granted(get("a", "x.test")));  // the rule is in force
  EXPECT_EQ(events, (std::vector<std::string>{"held pending", "client_gone approval_abandoned",
                                              "decided approved:permanent"}));
  // Any other scope applies nothing once the hold is gone: it still fails.
  waiter v{std::nullopt, reg.hold(get("a", "y.test"), {}, 10s, why)};
  v.start();
  const auto other = first_pending_id(reg);
  v.p->abandon();
  EXPECT_FALSE(reg.decide(other, approve(scope::agent_host), message));
}

// An access request that times out is recorded as a held request's timeout is: once.
TEST(ApprovalRegistry, AccessRequestTimeoutIsRecordedOnce) {
  registry reg;
  std::vector<std::string> events;
  std::vector<std::uint64_t> left;
  reg.set_event_sink([&](std::string_view event, std::uint64_t id, const request_info& r,
                         std::string_view outcome, std::string_view) {
    events.push_back(std::string(event) + " " + std::to_string(id) + " " + r.host + " " +
                     std::string(outcome));
  });
  reg.set_fleet_hooks(
      [&](std::uint64_t id, const request_info* r, std::chrono::milliseconds) {
        if (r == nullptr) left.push_back(id);
      },
      nullptr);
  std::string why;
  const auto id = reg.ask(get("a", "api.test", ""), {}, 0ms, why);
  ASSERT_NE(id, 0u) << why;
  EXPECT_EQ(reg.access_outcome(id, "a"), "timed_out");
  EXPECT_EQ(reg.access_outcome(id, "a"), "timed_out");
  EXPECT_FALSE(reg.granted(get("a", "api.test")));
  EXPECT_EQ(events, (std::vector<std::string>{"access_requested 1 api.test pending",
                                              "timed_out 1 api.test approval_timeout"}));
  EXPECT_EQ(left, std::vector<std::uint64_t>{id});  // it left the fleet's listing too
}

TEST(ApprovalRegistry, AccessRequestsArePolledByTheirAgentOnly) {
  registry reg;
  std::string why, message;
  auto r = get("a", "api.test", "");
  r.reason = "<b>need it</b>";
  const auto id = reg.ask(r, {}, 10s, why);
  ASSERT_NE(id, 0u) << why;
  EXPECT_EQ(reg.access_outcome(id, "a"), "pending");
  EXPECT_EQ(reg.access_outcome(id, "b"), "");
  // Stored raw; the JSON escapes it as JSON, whoever shows it escapes it for HTML.
  auto j = boost::json::parse(reg.json());
  EXPECT_EQ(j.at("pending").as_array().at(0).at("reason").as_string(), "<b>need it</b>");
  ASSERT_TRUE(reg.decide(id, approve(), message));
  EXPECT_EQ(reg.access_outcome(id, "a"), "approved");
  EXPECT_TRUE(reg.granted(get("a", "api.test", "/anything")));
}

TEST(ApprovalRegistry, ShutdownRefusesWhatIsHeld) {
  registry reg;
  std::string why;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  reg.shutdown();
  ASSERT_TRUE(w.outcome);
  EXPECT_EQ(w.outcome->reason, core::errc::shutting_down);
  EXPECT_FALSE(reg.hold(get("a", "x.test"), {}, 10s, why));
}

TEST(ApprovalAdminApi, BodiesAndIds) {
  registry reg;
  std::string why, message;
  waiter w{std::nullopt, reg.hold(get("a", "x.test"), {}, 10s, why)};
  w.start();
  const auto id = std::to_string(first_pending_id(reg));
  EXPECT_EQ(decide_from_admin(reg, "abc", true, "", "op", message), 404u);
  EXPECT_EQ(decide_from_admin(reg, "0", true, "", "op", message), 404u);
  for (const char* body :
       {"[]", "{\"scope\":\"forever\"}", "{\"duration\":\"0s\"}", "{\"duration\":\"400d\"}",
        "{\"method\":1}", "{\"path_prefix\":\"v1\"}", "{\"who\":\"me\"}", "{"}) {
    EXPECT_EQ(decide_from_admin(reg, id, true, body, "op", message), 400u) << body;
  }
  EXPECT_FALSE(w.outcome);
  EXPECT_EQ(
      decide_from_admin(reg, id, true, R"({"scope":"agent_host","duration":"10m","method":true})",
                        "op", message),
      200u)
      << message;
  EXPECT_TRUE(w.outcome && w.outcome->passes());
  EXPECT_EQ(decide_from_admin(reg, id, false, "", "op", message), 404u);
}

// The answer to a bad duration says "1s to 30d": days are a unit (core::parse_duration).
TEST(ApprovalAdminApi, DurationsInDays) {
  decision d;
  std::string error;
  ASSERT_TRUE(read_decision(R"({"scope":"agent_host","duration":"30d"})", d, error)) << error;
  EXPECT_EQ(d.duration, std::chrono::hours(24 * 30));
  ASSERT_TRUE(read_decision(R"({"duration":"1d"})", d, error)) << error;
  EXPECT_EQ(d.duration, std::chrono::hours(24));
  EXPECT_FALSE(read_decision(R"({"duration":"31d"})", d, error));
  EXPECT_NE(error.find("1s to 30d"), std::string::npos) << error;
}

// A path prefix narrows an agent_host grant only: the overlay rule a permanent approval writes
// has none, so asking for both is an error rather than a prefix that lasts until a reload.
TEST(ApprovalAdminApi, PathPrefixOnlyWithAgentHost) {
  decision d;
  std::string error;
  EXPECT_TRUE(read_decision(R"({"scope":"agent_host","path_prefix":"/v1/"})", d, error)) << error;
  EXPECT_EQ(d.path_prefix, "/v1/");
  decision p;
  EXPECT_FALSE(read_decision(R"({"scope":"permanent","path_prefix":"/v1/"})", p, error));
  EXPECT_NE(error.find("only with scope agent_host"), std::string::npos) << error;
  decision m;
  EXPECT_TRUE(read_decision(R"({"scope":"permanent","method":true})", m, error)) << error;
}

}  // namespace
}  // namespace airlock::filters::approval
