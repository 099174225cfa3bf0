// Approvals across replicas against a real redis-server (filters/approval/fleet.hpp): two
// "replicas" (a registry, a store client and a fleet each) in one process. A hold on one is
// listed and decided by the other, a grant reaches the other, a malformed message is dropped
// and counted, and with the store stopped the listing says so and a decision fails at once.
#include "approval_test_util.hpp"
#include "filters/approval/fleet.hpp"

#include "../state/redis_server.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <memory>
#include <optional>
#include <thread>

namespace airlock::filters::approval {
namespace {

using namespace std::chrono_literals;
using test::get;

template <class F>
bool eventually(F&& f) {
  for (int i = 0; i < 1000 && !f(); ++i)
    std::this_thread::sleep_for(10ms);
  return f();
}

struct replica {
  registry approvals;
  std::unique_ptr<state::client> store;
  std::unique_ptr<fleet> f;

  replica(std::uint16_t port, std::string name) {
    state::client_options o;
    o.host = "127.0.0.1";
    o.port = port;
    o.timeout = 500ms;
    store = std::make_unique<state::client>(std::move(o));
    fleet_options fo;
    fo.replica = std::move(name);
    fo.key_prefix = "test:";
    fo.store_timeout = 500ms;
    f = std::make_unique<fleet>(*store, approvals, fo);
    f->start();
  }
  ~replica() {
    f.reset();  // before the registry and the client (their order in cmd_proxy.cpp)
    store.reset();
  }
  boost::json::object listing() { return boost::json::parse(f->json()).as_object(); }
  bool lists(std::string_view id) {
    const auto l = listing();
    for (const auto& p : l.at("pending").as_array())
      if (const auto* s = p.as_object().at("id").if_string(); s && *s == id) return true;
    return false;
  }
};

decision approve(scope s = scope::once) {
  decision d;
  d.approve = true;
  d.scope = s;
  d.by = "alice";
  return d;
}

class ApprovalFleetStore : public ::testing::Test {
 protected:
  state::test::redis_server redis;
  replica r1{redis.port(), "r1"}, r2{redis.port(), "r2"};

  void SetUp() override {
    // Both subscribed and answering: a decision for no such hold comes back from the holder.
    ASSERT_TRUE(eventually([&] {
      return r2.f->decide_remote({"r1", 999}, approve()).status == 404 &&
             r1.f->decide_remote({"r2", 999}, approve()).message.starts_with("no pending");
    }));
  }
};

TEST_F(ApprovalFleetStore, HoldListedAndDecidedOnTheOtherReplica) {
  std::string why;
  auto p = r1.approvals.hold(get("a", "x.test"), {}, 30s, why);
  ASSERT_TRUE(p) << why;
  std::optional<verdict> outcome;
  p->start([&](verdict v) { outcome = std::move(v); });
  ASSERT_TRUE(eventually([&] { return r2.lists("r1:1"); })) << r2.f->json();
  EXPECT_EQ(r2.listing().at("fleet"), "ok");
  EXPECT_FALSE(r1.lists("r1:1")) << "a replica lists its own holds by number";

  const auto a = r2.f->decide_remote({"r1", 1}, approve());
  EXPECT_EQ(a.status, 200u) << a.message;
  EXPECT_EQ(a.target.host, "x.test");
  ASSERT_TRUE(eventually([&] { return outcome.has_value(); }));
  EXPECT_TRUE(outcome->passes());
  EXPECT_TRUE(eventually([&] { return !r2.lists("r1:1"); }));
  EXPECT_EQ(r2.f->decide_remote({"r1", 1}, approve()).status, 404u);  // decided already
  EXPECT_EQ(r2.f->decide_remote({"r9", 1}, approve()).status, 404u);  // no such replica
}

TEST_F(ApprovalFleetStore, AGrantReachesTheOtherReplica) {
  std::string why;
  auto p = r1.approvals.hold(get("a", "x.test"), {}, 30s, why);
  ASSERT_TRUE(p) << why;
  p->start([](verdict) {});
  ASSERT_TRUE(eventually([&] { return r2.lists("r1:1"); }));
  EXPECT_FALSE(r2.approvals.granted(get("a", "x.test")));
  EXPECT_EQ(r2.f->decide_remote({"r1", 1}, approve(scope::agent_host)).status, 200u);
  EXPECT_TRUE(eventually([&] { return r2.approvals.granted(get("a", "x.test", "/other")); }));
  EXPECT_FALSE(r2.approvals.granted(get("b", "x.test")));
}

TEST_F(ApprovalFleetStore, MalformedMessagesAreDroppedAndCounted) {
  std::string why;
  auto p = r1.approvals.hold(get("a", "x.test"), {}, 30s, why);
  std::optional<verdict> outcome;
  p->start([&](verdict v) { outcome = std::move(v); });
  // Whoever can publish on the store (a third client here).
  state::client_options o;
  o.host = "127.0.0.1";
  o.port = redis.port();
  state::client other(std::move(o));
  ASSERT_TRUE(eventually([&] { return other.up(); }));
  for (const char* junk : {"junk", "{\"t\":\"decide\",\"from\":\"r2\",\"id\":1,\"approve\":true}",
                           "{\"t\":\"grant\",\"from\":\"r2\"}"})
    other.command({"PUBLISH", "test:approvals:to:r1", junk}, [](state::reply) {});
  ASSERT_TRUE(eventually([&] { return r1.f->malformed() >= 3; }));
  EXPECT_FALSE(outcome) << "a malformed message decided a hold";
  EXPECT_EQ(r1.approvals.held_count(), 1u);
}

TEST_F(ApprovalFleetStore, StoreDownListsLocalHoldsAndFailsDecisionsInTime) {
  std::string why;
  auto p = r1.approvals.hold(get("a", "x.test"), {}, 30s, why);
  p->start([](verdict) {});
  ASSERT_TRUE(eventually([&] { return r2.lists("r1:1"); }));
  redis.stop();
  ASSERT_TRUE(eventually([&] { return !r1.store->up() && !r2.store->up(); }));
  const auto l = r1.listing();
  EXPECT_EQ(l.at("fleet"), "unavailable");
  EXPECT_EQ(l.at("pending").as_array().size(), 1u);
  const auto a = r2.f->decide_remote({"r1", 1}, approve());
  EXPECT_EQ(a.status, 503u) << a.message;
  EXPECT_EQ(r1.approvals.held_count(), 1u);
}

}  // namespace
}  // namespace airlock::filters::approval
