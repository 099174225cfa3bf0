#include "policy/snapshot.hpp"

#include "allocation_counter.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using airlock::test::allocations;
using airlock::test::counting;

TEST(DecideAllocation, AllowPathDoesNotAllocate) {
  auto p = test::must_load(R"(agents: {default: {rules: [a, b, c, d]}}
rules:
  - {name: a, hosts: [one.example], ports: [8080]}
  - {name: b, hosts: ['*.two.example']}
  - {name: c, host_regex: ['[a-z]+\.three\.example']}
  - {name: d, hosts: [four.example], ports: [80], methods: [GET], paths: ['/api/.*'], upgrades: [websocket]}
)");
  ASSERT_TRUE(p);
  const auto* agent = p->find_agent("default");
  ASSERT_NE(agent, nullptr);
  test::target_builder targets[] = {
      test::target_builder("one.example", 8080),
      test::target_builder("x.two.example", 443),
      test::target_builder("abc.three.example", 80),
      test::target_builder("four.example", 80, "GET", "/api/v1/x", "websocket"),
      test::target_builder::connect("x.two.example", 443),
  };
  // re2 builds its DFA lazily: warm it up first.
  for (const auto& t : targets)
    ASSERT_EQ(p->decide(*agent, t.t).reason, core::errc::ok);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 100; ++i)
    for (const auto& t : targets)
      (void)p->decide(*agent, t.t);
  counting = false;
  EXPECT_EQ(allocations, 0u);

  // The counter works: a denial builds its detail string.
  const test::target_builder denied("one.example", 22);
  counting = true;
  const auto d = p->decide(*agent, denied.t);
  counting = false;
  EXPECT_EQ(d.reason, core::errc::port_denied);
  EXPECT_GT(allocations, 0u);
}

}  // namespace
}  // namespace airlock::policy
