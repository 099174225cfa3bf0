// Approvals across replicas: the messages the replicas exchange through the store
// (filters/approval/fleet_message.hpp), their validation as untrusted input, and the registry's
// hooks that tell the fleet of holds and grants (registry.hpp).
#include "approval_test_util.hpp"
#include "filters/approval/fleet_message.hpp"
#include "filters/approval/registry.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <vector>

namespace airlock::filters::approval {
namespace {

using namespace std::chrono_literals;
namespace fm = fleet_msg;

using test::get;

TEST(ApprovalFleetMessage, ReplicaNamesAndQualifiedIds) {
  EXPECT_TRUE(fm::valid_replica("airlock-7d9f.x_1"));
  EXPECT_FALSE(fm::valid_replica(""));
  EXPECT_FALSE(fm::valid_replica("a:b"));
  EXPECT_FALSE(fm::valid_replica(std::string(65, 'a')));
  EXPECT_EQ(fm::sanitize_replica("host name:1/x"), "host-name-1-x");
  EXPECT_EQ(fm::sanitize_replica(""), "replica");
  EXPECT_EQ(fm::sanitize_replica(std::string(100, 'a')).size(), 64u);

  auto q = fm::parse_qualified("r2:7");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->replica, "r2");
  EXPECT_EQ(q->id, 7u);
  for (const char* bad :
       {"7", "r2:", ":7", "r2:0", "r2:7x", "r 2:7", "r2:-7", "r2:99999999999999999999999"})
    EXPECT_FALSE(fm::parse_qualified(bad)) << bad;
}

TEST(ApprovalFleetMessage, HeldRoundTrips) {
  fm::held h;
  h.replica = "r1";
  h.id = 42;
  h.request = get("agent-a", "api.test", "/v1/x?q=1");
  h.request.rule = "asked";
  h.request.reason = "need \"it\" <now>";
  h.request.access_request = true;
  h.since_s = 1'700'000'000;
  h.deadline_ms = 1'700'000'030'000;
  auto back = fm::decode_held(fm::encode(h));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->replica, "r1");
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->request.agent, "agent-a");
  EXPECT_EQ(back->request.path, "/v1/x?q=1");
  EXPECT_EQ(back->request.reason, h.request.reason);
  EXPECT_TRUE(back->request.access_request);
  EXPECT_EQ(back->deadline_ms, h.deadline_ms);
}

TEST(ApprovalFleetMessage, DecisionAckAndGrantRoundTrip) {
  fm::decide d{"r3", 9, 7, {}};
  d.d.approve = true;
  d.d.scope = scope::agent_host;
  d.d.duration = 10min;
  d.d.same_method = true;
  d.d.path_prefix = "/v1/";
  d.d.by = "alice";
  auto m = fm::decode(fm::encode(d));
  ASSERT_TRUE(m && m->decision);
  EXPECT_EQ(m->decision->from, "r3");
  EXPECT_EQ(m->decision->nonce, 9u);
  EXPECT_EQ(m->decision->id, 7u);
  EXPECT_TRUE(m->decision->d.approve);
  EXPECT_EQ(m->decision->d.scope, scope::agent_host);
  EXPECT_EQ(m->decision->d.duration, 10min);
  EXPECT_TRUE(m->decision->d.same_method);
  EXPECT_EQ(m->decision->d.path_prefix, "/v1/");
  EXPECT_EQ(m->decision->d.by, "alice");

  fm::ack a{9, 404, "no pending approval 7", get("a", "h.test")};
  m = fm::decode(fm::encode(a));
  ASSERT_TRUE(m && m->answer);
  EXPECT_EQ(m->answer->status, 404u);
  EXPECT_EQ(m->answer->target.host, "h.test");

  fm::grant_msg g{"r1", {}};
  g.g.id = 3;
  g.g.agent = "a";
  g.g.host = "h.test";
  g.g.port = 443;
  g.g.expires = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'800'000'000'123));
  m = fm::decode(fm::encode(g));
  ASSERT_TRUE(m && m->grant);
  EXPECT_EQ(m->grant->g.expires, g.g.expires);
  g.g.expires = std::chrono::system_clock::time_point::max();  // permanent: never expires
  m = fm::decode(fm::encode(g));
  ASSERT_TRUE(m && m->grant);
  EXPECT_EQ(m->grant->g.expires, std::chrono::system_clock::time_point::max());
}

// Untrusted: anything malformed, out of range or too big decodes to nothing.
TEST(ApprovalFleetMessage, RejectsMalformedMessages) {
  fm::decide d{"r3", 9, 7, {}};
  d.d.by = "bob";
  const std::string good = fm::encode(d);
  ASSERT_TRUE(fm::decode(good));
  auto with = [&](std::string_view key, boost::json::value v) {
    auto o = boost::json::parse(good).as_object();
    if (v.is_null())
      o.erase(key);
    else
      o[key] = std::move(v);
    return boost::json::serialize(o);
  };
  const std::vector<std::string> bad = {
      "", "not json", "[]", "{}", "{\"t\":\"other\"}", "{\"t\":\"decide\"}",
      with("from", "bad name"), with("from", ""), with("nonce", 0), with("nonce", -1),
      with("id", "7"), with("approve", 1), with("scope", "forever"), with("duration_ms", 0),
      with("duration_ms", 31LL * 24 * 3600 * 1000), with("path_prefix", "v1"),
      with("by", boost::json::value(std::string(300, 'x'))), with("method", nullptr),
      std::string(fm::max_message + 1, ' '),
      // Nesting beyond the flat objects the replicas send.
      "{\"t\":\"decide\",\"x\":[[[[[[1]]]]]]}"};
  for (const auto& text : bad)
    EXPECT_FALSE(fm::decode(text)) << text.substr(0, 80);
  EXPECT_FALSE(fm::decode_held("{\"replica\":\"r1\",\"id\":1,\"kind\":\"other\"}"));
  fm::grant_msg g{"r1", {}};
  g.g.id = 1;
  g.g.host = "h";
  g.g.port = 1;
  EXPECT_FALSE(fm::decode(fm::encode(g))) << "a grant without an agent";
  g.g.agent = "a";
  auto o = boost::json::parse(fm::encode(g)).as_object();
  o["expires_ms"] = INT64_MAX;  // as nanoseconds since the epoch, it would overflow
  EXPECT_FALSE(fm::decode(boost::json::serialize(o)));
}

// What the fleet hears from the registry: each hold's start and end, and each grant made.
struct hooks {
  std::vector<std::pair<std::uint64_t, bool>> holds;  // (id, began)
  std::vector<grant> grants;
  void install(registry& reg) {
    reg.set_fleet_hooks([this](std::uint64_t id, const request_info* r,
                               std::chrono::milliseconds) { holds.emplace_back(id, r != nullptr); },
                        [this](const grant& g) { grants.push_back(g); });
  }
};

TEST(ApprovalFleetHooks, EveryHoldEndsOnceAndGrantsAreTold) {
  registry reg;
  hooks h;
  h.install(reg);
  std::string why, message;
  auto p1 = reg.hold(get("a", "x.test", "/one"), {}, 10s, why);
  auto p2 = reg.hold(get("a", "x.test", "/two"), {}, 10s, why);
  auto p3 = reg.hold(get("b", "y.test"), {}, 10s, why);
  int done = 0;
  for (auto* p : {&p1, &p2, &p3})
    (*p)->start([&](verdict) { ++done; });
  decision d;
  d.approve = true;
  d.scope = scope::agent_host;
  d.by = "alice";
  ASSERT_TRUE(reg.decide(1, d, message)) << message;  // releases 2 too (the same agent and host)
  p3->cancel();                                       // timed out
  EXPECT_EQ(done, 2);
  const std::vector<std::pair<std::uint64_t, bool>> want = {{1, true},  {2, true},  {3, true},
                                                            {1, false}, {2, false}, {3, false}};
  EXPECT_EQ(h.holds, want);
  ASSERT_EQ(h.grants.size(), 1u);
  EXPECT_EQ(h.grants[0].host, "x.test");
  EXPECT_EQ(h.grants[0].by, "alice");
}

TEST(ApprovalFleetHooks, AGrantFromAnotherReplicaReleasesAndIsNotToldAgain) {
  registry reg;
  hooks h;
  h.install(reg);
  std::string why;
  auto p = reg.hold(get("a", "x.test"), {}, 10s, why);
  std::optional<verdict> outcome;
  p->start([&](verdict v) { outcome = std::move(v); });
  grant g;
  g.id = 5;
  g.agent = "a";
  g.host = "x.test";
  g.port = 443;
  g.expires = std::chrono::system_clock::now() + 1h;
  g.by = "bob";
  reg.add_grant(g);
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->passes());
  EXPECT_TRUE(reg.granted(get("a", "x.test", "/other")));
  EXPECT_FALSE(reg.granted(get("b", "x.test")));
  EXPECT_TRUE(h.grants.empty());
  const std::vector<std::pair<std::uint64_t, bool>> want = {{1, true}, {1, false}};
  EXPECT_EQ(h.holds, want);
}

}  // namespace
}  // namespace airlock::filters::approval
