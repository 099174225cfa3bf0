#include "filters/rate_limit/concurrency_gate.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

namespace airlock::filters::rate_limit {
namespace {

slot_ticket enter(const std::shared_ptr<concurrency_gate>& g, std::uint32_t cap) {
  if (!g->try_enter(cap)) return {};
  return slot_ticket(g);
}

TEST(RateLimitConcurrency, CapIsEnforcedAndTicketsRelease) {
  auto g = std::make_shared<concurrency_gate>();
  {
    slot_ticket a = enter(g, 2);
    slot_ticket b = enter(g, 2);
    EXPECT_TRUE(a.holds());
    EXPECT_TRUE(b.holds());
    EXPECT_EQ(g->in_flight(), 2u);
    EXPECT_FALSE(enter(g, 2).holds());
    EXPECT_EQ(g->in_flight(), 2u);  // a refusal leaves the count alone
    b.reset();
    b.reset();  // idempotent
    EXPECT_EQ(g->in_flight(), 1u);
    slot_ticket c = enter(g, 2);
    EXPECT_TRUE(c.holds());
    EXPECT_FALSE(enter(g, 2));
  }
  EXPECT_EQ(g->in_flight(), 0u);
}

TEST(RateLimitConcurrency, TicketsMove) {
  auto g = std::make_shared<concurrency_gate>();
  slot_ticket a = enter(g, 5);
  slot_ticket b(std::move(a));
  EXPECT_FALSE(a.holds());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(b.holds());
  EXPECT_EQ(g->in_flight(), 1u);

  // Move assignment frees the slot the target held.
  slot_ticket c = enter(g, 5);
  EXPECT_EQ(g->in_flight(), 2u);
  c = std::move(b);
  EXPECT_EQ(g->in_flight(), 1u);
  slot_ticket& alias = c;
  c = std::move(alias);  // self-move keeps the slot
  EXPECT_TRUE(c.holds());
  EXPECT_EQ(g->in_flight(), 1u);

  std::vector<slot_ticket> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(enter(g, 5));  // vector growth moves tickets around
  EXPECT_EQ(g->in_flight(), 5u);
  held.clear();
  EXPECT_EQ(g->in_flight(), 1u);
}

TEST(RateLimitConcurrency, LoweredCapDrainsFirst) {
  auto g = std::make_shared<concurrency_gate>();
  std::vector<slot_ticket> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(enter(g, 4));
  // A reload lowers the cap to 2: nothing enters until two are left... and then one fewer.
  EXPECT_FALSE(enter(g, 2));
  held.pop_back();
  held.pop_back();
  EXPECT_FALSE(enter(g, 2));
  held.pop_back();
  EXPECT_TRUE(enter(g, 2));
  EXPECT_FALSE(enter(g, 0));  // cap 0 admits nothing (the plan treats 0 as "no cap")
}

TEST(RateLimitConcurrency, TicketKeepsTheGateAlive) {
  auto g = std::make_shared<concurrency_gate>();
  slot_ticket t = enter(g, 1);
  std::weak_ptr<concurrency_gate> w = g;
  g.reset();
  EXPECT_FALSE(w.expired());
  t.reset();
  EXPECT_TRUE(w.expired());
}

}  // namespace
}  // namespace airlock::filters::rate_limit
