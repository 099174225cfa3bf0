#include "proxy/client_limiter.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

namespace airlock::proxy {
namespace {

namespace ip = boost::asio::ip;

ip::address addr(const char* s) {
  return ip::make_address(s);
}

TEST(ClientLimiter, CapsTotal) {
  client_limiter l;
  EXPECT_TRUE(l.try_acquire(addr("10.0.0.1"), 3, 10));
  EXPECT_TRUE(l.try_acquire(addr("10.0.0.2"), 3, 10));
  EXPECT_TRUE(l.try_acquire(addr("::1"), 3, 10));
  EXPECT_EQ(l.total(), 3u);
  EXPECT_FALSE(l.try_acquire(addr("10.0.0.4"), 3, 10));
  EXPECT_FALSE(l.try_acquire(addr("10.0.0.1"), 3, 10));
  EXPECT_EQ(l.total(), 3u) << "a refusal counts nothing";
}

TEST(ClientLimiter, CapsPerClient) {
  client_limiter l;
  auto a = addr("192.0.2.1"), b = addr("192.0.2.2");
  EXPECT_TRUE(l.try_acquire(a, 100, 2));
  EXPECT_TRUE(l.try_acquire(a, 100, 2));
  EXPECT_FALSE(l.try_acquire(a, 100, 2));
  EXPECT_TRUE(l.try_acquire(b, 100, 2)) << "another client is not affected";
  EXPECT_EQ(l.total(), 3u);
  l.release(a);
  EXPECT_TRUE(l.try_acquire(a, 100, 2)) << "a release frees the client's slot";
  EXPECT_FALSE(l.try_acquire(a, 100, 2));
  EXPECT_EQ(l.total(), 3u);
}

TEST(ClientLimiter, IPv6ClientsAreDistinct) {
  client_limiter l;
  EXPECT_TRUE(l.try_acquire(addr("2001:db8::1"), 10, 1));
  EXPECT_FALSE(l.try_acquire(addr("2001:db8::1"), 10, 1));
  EXPECT_TRUE(l.try_acquire(addr("2001:db8::2"), 10, 1));
}

TEST(ClientLimiter, ZeroCapsRefuseEverything) {
  client_limiter l;
  EXPECT_FALSE(l.try_acquire(addr("10.0.0.1"), 0, 10));
  EXPECT_FALSE(l.try_acquire(addr("10.0.0.1"), 10, 0));
  EXPECT_EQ(l.total(), 0u);
}

TEST(ClientLimiter, ReleaseOfUnknownClientChangesNothing) {
  client_limiter l;
  l.release(addr("10.0.0.9"));
  EXPECT_EQ(l.total(), 0u) << "no wrap below zero";
  EXPECT_TRUE(l.try_acquire(addr("10.0.0.1"), 1, 1));
  l.release(addr("10.0.0.2"));
  EXPECT_EQ(l.total(), 1u);
  l.release(addr("10.0.0.1"));
  l.release(addr("10.0.0.1"));
  EXPECT_EQ(l.total(), 0u);
  EXPECT_TRUE(l.try_acquire(addr("10.0.0.1"), 1, 1));
  EXPECT_FALSE(l.try_acquire(addr("10.0.0.1"), 1, 1)) << "double release did not add room";
}

TEST(ClientLimiter, SlotReleasesOnDestruction) {
  client_limiter l;
  auto a = addr("10.0.0.1");
  {
    ASSERT_TRUE(l.try_acquire(a, 10, 1));
    client_slot slot(l, a);
    EXPECT_EQ(l.total(), 1u);
    EXPECT_FALSE(l.try_acquire(a, 10, 1));
  }
  EXPECT_EQ(l.total(), 0u);
  EXPECT_TRUE(l.try_acquire(a, 10, 1));
  {
    std::optional<client_slot> slot;
    slot.emplace(l, a);
  }
  EXPECT_EQ(l.total(), 0u);
}

TEST(ClientLimiter, ThreadsHammeringKeepCountsConsistent) {
  constexpr std::uint32_t max_total = 12, max_per_client = 4;
  constexpr int threads = 8, rounds = 20'000;
  const std::array<ip::address, 4> clients{addr("10.0.0.1"), addr("10.0.0.2"), addr("::1"),
                                           addr("2001:db8::7")};
  client_limiter l;
  // Lower bounds on the limiter's own counts: incremented after a successful acquire and
  // decremented before the release, so they never exceed what the limiter holds.
  std::array<std::atomic<int>, 4> held{};
  std::atomic<int> held_total{0}, over_total{0}, over_client{0}, granted{0}, refused{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<std::size_t> mine;
      for (int i = 0; i < rounds; ++i) {
        std::size_t c = static_cast<std::size_t>((i * 7 + t) % 4);
        if (l.try_acquire(clients[c], max_total, max_per_client)) {
          ++granted;
          if (++held[c] > static_cast<int>(max_per_client)) ++over_client;
          if (++held_total > static_cast<int>(max_total)) ++over_total;
          if (l.total() > max_total) ++over_total;
          mine.push_back(c);
        } else {
          ++refused;
        }
        // Each thread alone holds up to more than the total cap, so the caps are reached
        // whatever the scheduler does (threads that never overlap still meet them).
        if (mine.size() > max_total || (i % 5 == 0 && !mine.empty())) {
          auto r = mine.front();
          mine.erase(mine.begin());
          --held[r];
          --held_total;
          l.release(clients[r]);
        }
      }
      for (auto r : mine) {
        --held[r];
        --held_total;
        l.release(clients[r]);
      }
    });
  }
  for (auto& th : pool)
    th.join();
  EXPECT_EQ(over_total.load(), 0);
  EXPECT_EQ(over_client.load(), 0);
  EXPECT_EQ(l.total(), 0u);
  EXPECT_GT(granted.load(), 0);
  EXPECT_GT(refused.load(), 0) << "the caps were reached at least once";
  // Every client has its full allowance back.
  for (const auto& c : clients) {
    for (std::uint32_t i = 0; i < max_per_client; ++i)
      EXPECT_TRUE(l.try_acquire(c, 100, max_per_client)) << c.to_string();
    EXPECT_FALSE(l.try_acquire(c, 100, max_per_client)) << c.to_string();
  }
}

}  // namespace
}  // namespace airlock::proxy
