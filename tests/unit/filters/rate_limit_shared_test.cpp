// Shared limits (state: redis): the Lua scripts against a real redis-server (grant up to the
// burst, then a retry time; refunds), the plan's leases and waits, two replicas on one bucket,
// and on_unavailable (deny; local with the limit divided among the replicas).
#include "core/steady_ns.hpp"
#include "filters/rate_limit/fleet_control.hpp"
#include "filters/rate_limit/plan.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/rate_limit/shared_store.hpp"
#include "rate_limit_test_util.hpp"

#include "../state/redis_server.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>

namespace airlock::filters::rate_limit {
namespace {

using namespace std::chrono_literals;
using namespace test;

std::unique_ptr<shared_store> store_on(std::uint16_t port, std::uint32_t replicas = 1,
                                       bool deny = false) {
  state::client_options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = 500ms;
  store_settings s;
  s.key_prefix = "test:";
  s.replicas = replicas;
  s.deny_when_unavailable = deny;
  return std::make_unique<shared_store>(std::move(o), s);
}

bool eventually_up(const shared_store& s) {
  for (int i = 0; i < 1000 && !s.available(); ++i)
    std::this_thread::sleep_for(10ms);
  return s.available();
}

template <class F>
bool eventually(F&& f) {
  for (int i = 0; i < 1000 && !f(); ++i)
    std::this_thread::sleep_for(10ms);
  return f();
}

// acquire(), awaited: {granted, retry_after_ns}.
std::pair<std::int64_t, std::int64_t> acquire(shared_store& s, std::shared_ptr<lease> l,
                                              const gcra_params& p, std::uint32_t want) {
  auto done = std::make_shared<std::promise<std::pair<std::int64_t, std::int64_t>>>();
  auto f = done->get_future();
  s.acquire(std::move(l), p, want, t0, [done](std::int64_t g, std::int64_t r) {
    done->set_value({g, r});
  });
  if (f.wait_for(10s) != std::future_status::ready) return {-2, 0};
  return f.get();
}

// admit(), and when it must wait, the wait done by hand (what lease_wait does).
admission admit_waiting(shared_store& s, const plan& p, std::int64_t now) {
  admission a = p.admit(0, plan::no_rule, now);
  for (int round = 0; round < 4 && a.must_wait(); ++round) {
    const auto [granted, retry] = acquire(s, a.refill, a.refill_params, a.refill_want);
    a = p.take_tokens(0, plan::no_rule, now, granted >= 0);
  }
  return a;
}

TEST(SharedScripts, GrantUpToTheBurstThenARetryTimeAndRefunds) {
  state::test::redis_server server;
  auto store = store_on(server.port());
  ASSERT_TRUE(eventually_up(*store));
  const auto p = gcra_params::requests(10, s);  // 10 a second, burst 10
  auto l = std::make_shared<lease>("test:k");
  EXPECT_EQ(acquire(*store, l, p, 4).first, 4);
  EXPECT_EQ(acquire(*store, l, p, 16).first, 6);  // what is left of the burst
  EXPECT_EQ(l->units.load(), 10);
  const auto [none, retry] = acquire(*store, l, p, 1);
  EXPECT_EQ(none, 0);
  EXPECT_GT(retry, 0);
  EXPECT_LE(retry, 100 * ms + 1'000);  // one unit is 100 ms
  EXPECT_GT(l->empty_until_ns.load(), t0);
  // Units leased and not used go back when the lease is older than lease_ttl.
  store->expire(*l, p, t0 + shared_store::lease_ttl_ns);
  EXPECT_EQ(l->units.load(), 0);
  auto again = std::make_shared<lease>("test:k");
  // The refund is fire and forget; the next acquire on the same connection comes after it.
  EXPECT_GE(acquire(*store, again, p, 16).first, 9);
}

TEST(SharedScripts, LeaseBatchIsAQuarterOfTheBurstPerReplica) {
  state::test::redis_server server;
  auto one = store_on(server.port(), 1);
  auto three = store_on(server.port(), 3);
  EXPECT_EQ(one->lease_batch(gcra_params::requests(600, 60 * s)), 16u);
  EXPECT_EQ(three->lease_batch(gcra_params::requests(30, 60 * s)), 2u);
  EXPECT_EQ(three->lease_batch(gcra_params::requests(5, s)), 1u);
  EXPECT_EQ(one->bucket_key("coder", "", "requests"), "test:rl:coder:requests");
  EXPECT_EQ(one->bucket_key("coder", "api", "requests"), "test:rl:coder:api:requests");
}

TEST(SharedPlan, EmptyLeaseWaitsThenAdmitsFromTheLease) {
  state::test::redis_server server;
  auto store = store_on(server.port());
  ASSERT_TRUE(eventually_up(*store));
  registry reg;
  reg.use_store(store.get());
  const auto p = reg.bind({agent("a", per_second(8))});
  admission first = p->admit(0, plan::no_rule, t0);
  ASSERT_TRUE(first.must_wait());
  EXPECT_FALSE(first.admitted());
  EXPECT_EQ(first.refill_want, 2u);  // 8 / 4
  ASSERT_EQ(acquire(*store, first.refill, first.refill_params, first.refill_want).first, 2);
  EXPECT_TRUE(p->take_tokens(0, plan::no_rule, t0).admitted());
  // The second unit of the batch: no wait.
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).admitted());
  EXPECT_TRUE(p->admit(0, plan::no_rule, t0).must_wait());
}

TEST(SharedPlan, TwoReplicasShareOneBucket) {
  state::test::redis_server server;
  auto store_a = store_on(server.port(), 2);
  auto store_b = store_on(server.port(), 2);
  ASSERT_TRUE(eventually_up(*store_a));
  ASSERT_TRUE(eventually_up(*store_b));
  registry a, b;
  a.use_store(store_a.get());
  b.use_store(store_b.get());
  const auto pa = a.bind({agent("coder", per_minute(10))});
  const auto pb = b.bind({agent("coder", per_minute(10))});
  int admitted = 0;
  for (int i = 0; i < 20; ++i) {
    const admission x = admit_waiting(*store_a, *pa, t0);
    const admission y = admit_waiting(*store_b, *pb, t0);
    admitted += x.admitted() + y.admitted();
    if (!x.admitted()) {
      EXPECT_EQ(x.error, core::errc::rate_limited);
    }
  }
  // One bucket of 10 for both (a refill of one unit takes 6 s); alone, each would admit 10.
  EXPECT_GE(admitted, 10);
  EXPECT_LE(admitted, 11);
}

// sync_bytes(), awaited: whether the store answered.
bool sync(shared_store& s, const std::shared_ptr<byte_tally>& t, const gcra_params& p) {
  auto done = std::make_shared<std::promise<bool>>();
  auto f = done->get_future();
  s.sync_bytes(t, p, t0, [done](bool ok) { done->set_value(ok); });
  return f.wait_for(10s) == std::future_status::ready && f.get();
}

policy::model::rate bytes_per_hour(std::uint64_t n) {
  policy::model::rate r;
  r.bytes_per_hour = n;
  return r;
}

TEST(SharedPlan, ByteQuotaIsTheFleetsChargedAfterTheFact) {
  state::test::redis_server server;
  auto store_a = store_on(server.port(), 2);
  auto store_b = store_on(server.port(), 2);
  ASSERT_TRUE(eventually_up(*store_a));
  ASSERT_TRUE(eventually_up(*store_b));
  registry a, b;
  a.use_store(store_a.get());
  b.use_store(store_b.get());
  const auto pa = a.bind({agent("coder", bytes_per_hour(1'000))});
  const auto pb = b.bind({agent("coder", bytes_per_hour(1'000))});
  const auto& tally = pa->agents()[0].state->buckets.shared_bytes_per_hour;
  ASSERT_TRUE(tally);
  EXPECT_EQ(store_a->flush_bytes(pa->agents()[0].limits.bytes_per_hour), 7);  // 1000 / 128

  // Nothing known yet: the admission asks the store first.
  admission first = pa->admit(0, plan::no_rule, t0);
  ASSERT_TRUE(first.must_wait());
  ASSERT_EQ(first.sync, tally);
  ASSERT_TRUE(sync(*store_a, first.sync, first.sync_params));
  EXPECT_TRUE(pa->take_tokens(0, plan::no_rule, t0).admitted());

  // 700 bytes, then 600: more than the replica's share (500) and, together, than the quota.
  // Each is told to the store in the background (past flush_bytes).
  for (std::uint64_t n : {700u, 600u}) {
    EXPECT_EQ(pa->throttle(0, plan::no_rule, direction::download, n, t0), 0);
    ASSERT_TRUE(eventually([&] { return !tally->syncing.load() && tally->pending.load() == 0; }));
  }
  // Replica a learnt from its last charge; replica b asks and is refused too.
  const admission refused = pa->admit(0, plan::no_rule, t0);
  EXPECT_EQ(refused.error, core::errc::quota_exceeded);
  EXPECT_GT(refused.retry_after_seconds, 0u);
  admission other = pb->admit(0, plan::no_rule, t0);
  ASSERT_TRUE(other.must_wait());
  ASSERT_TRUE(sync(*store_b, other.sync, other.sync_params));
  const admission also = pb->take_tokens(0, plan::no_rule, t0);
  EXPECT_EQ(also.error, core::errc::quota_exceeded);
  EXPECT_EQ(also.limit, "agent coder bytes_per_hour=1000");
}

TEST(SharedPlan, ByteQuotaDebtStopsAtOneBucket) {
  // One body ten times the fleet's hourly quota: refused for an hour, not for nine.
  state::test::redis_server server;
  auto store = store_on(server.port(), 2);
  ASSERT_TRUE(eventually_up(*store));
  registry reg;
  reg.use_store(store.get());
  const auto p = reg.bind({agent("coder", bytes_per_hour(1'000))});
  const auto& tally = p->agents()[0].state->buckets.shared_bytes_per_hour;
  admission first = p->admit(0, plan::no_rule, t0);
  ASSERT_TRUE(first.must_wait());
  ASSERT_TRUE(sync(*store, first.sync, first.sync_params));
  EXPECT_TRUE(p->take_tokens(0, plan::no_rule, t0).admitted());
  EXPECT_EQ(p->throttle(0, plan::no_rule, direction::download, 10'000, t0), 0);
  ASSERT_TRUE(eventually([&] { return !tally->syncing.load() && tally->pending.load() == 0; }));
  const admission refused = p->admit(0, plan::no_rule, t0);
  EXPECT_EQ(refused.error, core::errc::quota_exceeded);
  EXPECT_GT(refused.retry_after_seconds, 3'500u);
  EXPECT_LE(refused.retry_after_seconds, 3'601u);
}

TEST(SharedPlan, StoreUnavailableDenyRefuses) {
  auto store = store_on(state::test::free_port(), 3, true);
  registry reg;
  reg.use_store(store.get());
  const auto p = reg.bind({agent("a", per_second(9)), agent("free")});
  const admission a = p->admit(0, plan::no_rule, t0);
  EXPECT_EQ(a.error, core::errc::store_unavailable);
  // An agent without shared limits is not affected.
  EXPECT_TRUE(p->admit(1, plan::no_rule, t0).admitted());
}

TEST(SharedPlan, StoreUnavailableLocalTakesTheReplicasShare) {
  auto store = store_on(state::test::free_port(), 3, false);
  registry reg;
  reg.use_store(store.get());
  const auto p = reg.bind({agent("a", per_second(9))});
  int admitted = 0;
  for (int i = 0; i < 9; ++i)
    admitted += p->admit(0, plan::no_rule, t0).admitted();
  EXPECT_EQ(admitted, 3);  // 9 / 3 replicas
  const admission refused = p->admit(0, plan::no_rule, t0);
  EXPECT_EQ(refused.error, core::errc::rate_limited);
  EXPECT_EQ(refused.limit, "agent a requests_per_second=9");  // the limit as written
}

bool is_stopped(const registry& r, const std::string& name) {
  const auto names = r.stopped();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::uint32_t suspended_left(const registry& r) {
  return r.status(core::steady_now_ns()).at(0).suspended_seconds_left;
}

TEST(FleetControl, StopTripAndResumeReachTheOtherReplicaAndARestartedOne) {
  state::test::redis_server server;
  auto store_a = store_on(server.port());
  auto store_b = store_on(server.port());
  registry a, b;
  const auto breaker = breaker_of(3, 60s, 30s);
  a.bind({agent("coder", {}, {}, breaker)});
  b.bind({agent("coder", {}, {}, breaker)});
  fleet_control fleet_a(*store_a, a);
  fleet_control fleet_b(*store_b, b);
  ASSERT_TRUE(fleet_a.start(10s));
  ASSERT_TRUE(fleet_b.start(10s));

  // The subscription is in place once a message published by the other replica arrives;
  // publish until then (bounded).
  ASSERT_TRUE(eventually([&] {
    store_b->publish_stop("coder", true);
    std::this_thread::sleep_for(20ms);
    return is_stopped(a, "coder");
  }));
  // A replica that starts afterwards reads the stored stop before it serves.
  {
    auto store_c = store_on(server.port());
    registry c;
    c.bind({agent("coder", {}, {}, breaker)});
    fleet_control fleet_c(*store_c, c);
    ASSERT_TRUE(fleet_c.start(10s));
    EXPECT_TRUE(is_stopped(c, "coder"));
  }
  store_b->publish_stop("coder", false);
  ASSERT_TRUE(eventually([&] { return !is_stopped(a, "coder"); }));

  store_a->publish_trip("coder", 30 * s);
  ASSERT_TRUE(eventually([&] { return suspended_left(b) > 0; }));
  EXPECT_LE(suspended_left(b), 30u);
  {
    auto store_c = store_on(server.port());
    registry c;
    c.bind({agent("coder", {}, {}, breaker)});
    fleet_control fleet_c(*store_c, c);
    ASSERT_TRUE(fleet_c.start(10s));
    EXPECT_GT(suspended_left(c), 0u);
  }
}

TEST(FleetControl, ApplyIgnoresMalformedMessages) {
  auto store = store_on(state::test::free_port());
  registry r;
  r.bind({agent("coder", {}, {}, breaker_of(3, 60s, 30s))});
  fleet_control fleet(*store, r);
  for (std::string_view m : {"", "stop", "trip coder", "trip coder -5", "trip coder x", "frob a"})
    fleet.apply(m);
  EXPECT_TRUE(r.stopped().empty());
  EXPECT_EQ(suspended_left(r), 0u);
  fleet.apply("stop nobody");  // not in the policy: nothing
  EXPECT_TRUE(r.stopped().empty());
  fleet.apply("stop coder");
  EXPECT_TRUE(is_stopped(r, "coder"));
}

}  // namespace
}  // namespace airlock::filters::rate_limit
