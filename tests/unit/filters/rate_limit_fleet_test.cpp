// The fleet's kill switch and breaker (fleet_control, shared_store's outbox) against a real
// redis-server, where the store is not there when it is needed: a stop or a trip issued while it
// is down reaches the others once it is back; a stop the pub/sub connection never delivered is
// read back within the sync interval; a replica under on_unavailable: deny serves nobody until
// it has read the stored stops; numbers from the store or a control message never overflow.
#include "core/steady_ns.hpp"
#include "filters/rate_limit/control_outbox.hpp"
#include "filters/rate_limit/fleet_control.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/rate_limit/shared_store.hpp"
#include "rate_limit_test_util.hpp"

#include "../state/client_test_util.hpp"
#include "../state/redis_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <limits>

namespace airlock::filters::rate_limit {
namespace {

using namespace std::chrono_literals;
using namespace test;
using state::test::eventually;

std::unique_ptr<shared_store> store_on(std::uint16_t port, bool deny = false) {
  state::client_options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = 300ms;
  o.min_backoff = 20ms;
  o.max_backoff = 200ms;
  store_settings s;
  s.key_prefix = "test:";
  s.deny_when_unavailable = deny;
  return std::make_unique<shared_store>(std::move(o), s);
}

bool is_stopped(const registry& r, const std::string& name) {
  const auto names = r.stopped();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::uint32_t suspended_left(const registry& r) {
  return r.status(core::steady_now_ns()).at(0).suspended_seconds_left;
}

// publish_stop(), awaited: whether the store accepted it.
bool publish_stop(shared_store& s, std::string_view agent, bool stop) {
  auto p = std::make_shared<std::promise<bool>>();
  auto f = p->get_future();
  s.publish_stop(agent, stop, [p](bool delivered) { p->set_value(delivered); });
  return f.wait_for(10s) == std::future_status::ready && f.get();
}

TEST(FleetControl, StopAndTripWhileTheStoreIsDownReachTheOthersWhenItIsBack) {
  state::test::redis_server server;
  auto store_a = store_on(server.port());
  auto store_b = store_on(server.port());
  registry a, b;
  const auto breaker = breaker_of(3, 60s, 30s);
  a.bind({agent("coder", {}, {}, breaker), agent("tester", {}, {}, breaker)});
  b.bind({agent("coder", {}, {}, breaker), agent("tester", {}, {}, breaker)});
  fleet_control fleet_a(*store_a, a);
  fleet_control fleet_b(*store_b, b);
  ASSERT_TRUE(fleet_a.start(10s));
  ASSERT_TRUE(fleet_b.start(10s));

  server.stop();
  ASSERT_TRUE(eventually([&] { return !store_a->available(); }));
  ASSERT_TRUE(a.stop("coder"));
  EXPECT_FALSE(publish_stop(*store_a, "coder", true));  // kept, and said so
  store_a->publish_trip("tester", 30 * s);
  EXPECT_EQ(store_a->outbox().size(), 2u);

  server.start();  // empty: persistence is off
  EXPECT_TRUE(eventually([&] { return is_stopped(b, "coder"); }));
  EXPECT_TRUE(
      eventually([&] { return b.status(core::steady_now_ns()).at(1).suspended_seconds_left > 0; }));
  EXPECT_TRUE(eventually([&] { return store_a->outbox().size() == 0; }));
  const auto stored = state::test::call(store_a->client(), {"SMEMBERS", "test:stopped"});
  ASSERT_EQ(stored.elements.size(), 1u);
  EXPECT_EQ(stored.elements[0].text, "coder");
  // A replica started now reads both.
  auto store_c = store_on(server.port());
  registry c;
  c.bind({agent("coder", {}, {}, breaker), agent("tester", {}, {}, breaker)});
  fleet_control fleet_c(*store_c, c);
  ASSERT_TRUE(fleet_c.start(10s));
  EXPECT_TRUE(is_stopped(c, "coder"));
  EXPECT_GT(c.status(core::steady_now_ns()).at(1).suspended_seconds_left, 0u);
}

TEST(FleetControl, AStopNoMessageAnnouncedIsReadWithinTheSyncInterval) {
  // What a stop published while this replica's pub/sub connection was reconnecting looks like
  // to it: stored, never heard. Its command connection never drops.
  state::test::redis_server server;
  auto store = store_on(server.port());
  registry r;
  r.bind({agent("coder", {}, {}, breaker_of(3, 60s, 30s))});
  fleet_control fleet(*store, r);
  ASSERT_TRUE(fleet.start(10s));
  state::client_options o;
  o.host = "127.0.0.1";
  o.port = server.port();
  state::client direct(o);
  ASSERT_TRUE(eventually([&] { return direct.up(); }));
  EXPECT_EQ(state::test::call(direct, {"SADD", "test:stopped", "coder"}).integer, 1);
  const auto stored_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return is_stopped(r, "coder"); }, 5s));
  // Within the interval and a round trip (generous for sanitized builds).
  EXPECT_LT(std::chrono::steady_clock::now() - stored_at, fleet_control::sync_interval + 1s);
}

TEST(FleetControl, DenyServesNobodyUntilTheStoredStopsWereRead) {
  const std::uint16_t port = state::test::free_port();  // nothing listens there yet
  auto store = store_on(port, true);
  registry r;
  r.use_store(store.get());
  const auto p = r.bind({agent("free")});  // no shared limit: deny alone would admit it
  fleet_control fleet(*store, r);
  EXPECT_FALSE(fleet.start(200ms));
  const admission refused = p->admit(0, plan::no_rule, t0);
  EXPECT_EQ(refused.error, core::errc::store_unavailable);
  state::test::redis_server server({}, false, port);
  ASSERT_TRUE(eventually([&] { return store->control_read(); }));
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
}

TEST(FleetControl, HugeNumbersSuspendForTheCapAndNeverOverflow) {
  auto store = store_on(state::test::free_port());
  registry r;
  r.bind({agent("coder", {}, {}, breaker_of(3, 60s, 30s))});
  fleet_control fleet(*store, r);
  fleet.apply("trip coder 9223372036854775807");  // any client allowed to PUBLISH can send it
  EXPECT_GT(suspended_left(r), 365u * 24 * 3600);
  EXPECT_EQ(store_wait_ns(std::numeric_limits<std::int64_t>::max(), 1'000), max_store_wait_ns);
  EXPECT_EQ(store_wait_ns(-5, 1'000'000), 0);
  EXPECT_EQ(store_wait_ns(7, 1'000), 7'000);
  EXPECT_EQ(time_after(std::numeric_limits<std::int64_t>::max() - 1, max_store_wait_ns),
            std::numeric_limits<std::int64_t>::max());
}

TEST(ControlOutbox, KeepsTheLatestWordPerAgentUntilDelivered) {
  control_outbox box;
  const auto stop = box.put_control("coder", true);
  const auto trip = box.put_trip("coder", 100);
  EXPECT_EQ(box.size(), 2u);
  const auto mark = box.mark();
  EXPECT_FALSE(box.resumed_since("coder", mark));
  const auto resume = box.put_control("coder", false);  // replaces the stop, drops the trip
  EXPECT_EQ(box.size(), 1u);
  EXPECT_TRUE(box.resumed_since("coder", mark));
  box.delivered(stop);  // the older stop's answer: the resume stays
  box.delivered(trip);
  ASSERT_EQ(box.pending(0).size(), 1u);
  EXPECT_EQ(box.pending(0)[0].what, control_outbox::message::kind::resume);
  box.delivered(resume);
  EXPECT_EQ(box.size(), 0u);
  EXPECT_TRUE(box.resumed_since("coder", mark));  // resumed after the mark all the same
  EXPECT_FALSE(box.resumed_since("coder", box.mark()));
  box.put_trip("tester", 100);
  EXPECT_EQ(box.pending(99).size(), 1u);
  EXPECT_TRUE(box.pending(100).empty());  // its cool-down is over: nothing to tell
  box.note_resume("tester");
  EXPECT_TRUE(box.resumed_since("tester", mark));
}

}  // namespace
}  // namespace airlock::filters::rate_limit
