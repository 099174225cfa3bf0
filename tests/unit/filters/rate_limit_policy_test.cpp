#include "filters/rate_limit/registry.hpp"

#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "rate_limit_test_util.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

// Binding real snapshots, built from YAML by the policy loader.
namespace airlock::filters::rate_limit {
namespace {

using core::errc;
using namespace test;

std::shared_ptr<const policy::snapshot> load(std::string_view yaml) {
  auto r = policy::load_string(yaml, "test.yaml");
  std::string all;
  for (const auto& e : r.errors)
    all += e.to_string() + "\n";
  EXPECT_TRUE(r.ok()) << all;
  return r.policy;
}

constexpr std::string_view example = R"(
agents:
  coder:
    rules: [github, api]
    rate:
      requests_per_minute: 600
      burst: 50
      upload_bytes_per_second: 1MiB
      download_bytes_per_second: 10MiB
      concurrent: 20
      requests_per_hour: 10000
      bytes_per_hour: 1GiB
    breaker: {max_failures: 50, window: 1m, cooldown: 5m}
  default: {rules: [api]}
rules:
  - {name: github, hosts: [api.github.com]}
  - name: api
    hosts: [api.example.com]
    rate: {requests_per_second: 5, burst: 10}
)";

TEST(RateLimitPolicy, BindsTheSchemaExample) {
  const auto snap = load(example);
  ASSERT_NE(snap, nullptr);
  registry reg;
  const auto p = reg.bind(snap);
  ASSERT_EQ(p->agent_count(), 2u);
  EXPECT_EQ(p->snapshot(), snap.get());
  EXPECT_TRUE(p->limits_anything());

  const policy::compiled_agent* coder = snap->find_agent("coder");
  ASSERT_NE(coder, nullptr);
  const std::size_t a = p->agent_index(*coder);
  ASSERT_NE(a, plan::npos);
  EXPECT_EQ(p->agent_name(a), "coder");
  const std::size_t api = p->rule_position(a, coder->rules[1]);
  const std::size_t github = p->rule_position(a, coder->rules[0]);
  EXPECT_EQ(api, 1u);
  EXPECT_EQ(github, 0u);

  const auto& e = p->agents()[a];
  EXPECT_EQ(e.limits.requests.cost_ns(1), 100 * ms);
  EXPECT_EQ(e.limits.requests.capacity_ns, 5 * s);  // burst 50
  EXPECT_EQ(e.limits.concurrent, 20u);
  EXPECT_EQ(e.limits.upload.capacity_ns, s);
  EXPECT_EQ(e.limits.download.cost_ns(10 << 20), s);
  EXPECT_EQ(e.limits.bytes_per_hour.cost_ns(1ull << 30), hour);
  EXPECT_EQ(e.limits.requests_per_hour.cost_ns(1), hour / 10'000);
  EXPECT_EQ(e.breaker.max_failures, 50u);
  EXPECT_EQ(e.breaker.window_ns, 60 * s);
  EXPECT_EQ(e.breaker.cooldown_ns, 300 * s);
  EXPECT_EQ(e.rules[github].state, nullptr);  // no rate on that rule
  ASSERT_NE(e.rules[api].state, nullptr);

  // The rule's bucket (burst 10) runs out first on api; the agent's (burst 50) on github.
  EXPECT_EQ(admit_all(*p, a, api, t0), 10);
  admission r = p->admit(a, api, t0);
  EXPECT_EQ(r.error, errc::rate_limited);
  EXPECT_EQ(r.limit, "rule api (agent coder) requests_per_second=5");
  EXPECT_EQ(r.retry_after_seconds, 1u);
  EXPECT_EQ(admit_all(*p, a, github, t0), 40);
  r = p->admit(a, github, t0);
  EXPECT_EQ(r.limit, "agent coder requests_per_minute=600");

  // The default agent has its own buckets on api.
  const std::size_t d = p->agent_index(*snap->find_agent("default"));
  EXPECT_EQ(admit_all(*p, d, p->rule_position(d, "api"), t0), 10);
}

TEST(RateLimitPolicy, ReloadKeepsStateByName) {
  registry reg;
  const auto p1 = reg.bind(load(example));
  const std::size_t a1 = p1->agent_index("coder");
  ASSERT_EQ(admit_all(*p1, a1, 1, t0), 10);
  ASSERT_TRUE(reg.stop("default"));

  // The same names in another order, one more rule: state kept, stopped agent still stopped.
  const auto p2 = reg.bind(load(R"(
agents:
  default: {rules: [api]}
  coder:
    rules: [api, extra]
    rate: {requests_per_minute: 600, burst: 50}
rules:
  - {name: extra, hosts: [x.example.com], rate: {requests_per_second: 1}}
  - {name: api, hosts: [api.example.com], rate: {requests_per_second: 5, burst: 10}}
)"));
  const std::size_t a2 = p2->agent_index("coder");
  EXPECT_EQ(a2, 1u);
  EXPECT_EQ(p2->admit(a2, p2->rule_position(a2, "api"), t0).error, errc::rate_limited);
  EXPECT_EQ(admit_all(*p2, a2, p2->rule_position(a2, "extra"), t0), 1);
  EXPECT_EQ(p2->admit(p2->agent_index("default"), 0, t0).error, errc::agent_stopped);

  // A compiled_agent of another snapshot is not an index of this plan.
  EXPECT_EQ(p2->agent_index(p1->snapshot()->agents()[0]), plan::npos);
  const auto snap2 = p2->snapshot();
  EXPECT_EQ(p1->rule_position(0, snap2->agents()[0].rules[0]), plan::no_rule);
}

TEST(RateLimitPolicy, PlanKeepsItsSnapshotAlive) {
  std::weak_ptr<const policy::snapshot> weak;
  registry reg;
  {
    auto snap = load(example);
    weak = snap;
    reg.bind(std::move(snap));
  }
  EXPECT_FALSE(weak.expired());
  auto plan = reg.current();
  reg.bind(load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [a.example]}\n"));
  EXPECT_FALSE(weak.expired());  // the old plan still holds it
  plan.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(RateLimitPolicy, NoRateAnywhereCostsNothing) {
  registry reg;
  const auto p = reg.bind(
      load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [a.example]}\n"));
  EXPECT_FALSE(p->limits_anything());
  const admission a = p->admit(0, 0, t0);
  EXPECT_TRUE(a.admitted());
  EXPECT_FALSE(a.agent_slot.holds());
  EXPECT_EQ(p->throttle(0, 0, direction::upload, 1 << 20, t0), 0);
  EXPECT_EQ(p->agents()[0].rules[0].state, nullptr);
}

TEST(RateLimitPolicy, DecisionRuleMapsToPosition) {
  const auto snap = load(example);
  registry reg;
  const auto p = reg.bind(snap);
  const policy::compiled_agent* coder = snap->find_agent("coder");
  // Whatever rule decide() returns is one of the agent's, so it has a position.
  for (const policy::compiled_rule* r : coder->rules)
    EXPECT_NE(p->rule_position(p->agent_index(*coder), r), plan::no_rule) << r->name;
  // A rule of the policy the agent does not list has none.
  const policy::compiled_agent* dflt = snap->find_agent("default");
  EXPECT_EQ(p->rule_position(p->agent_index(*dflt), coder->rules[0]), plan::no_rule);
}

}  // namespace
}  // namespace airlock::filters::rate_limit
