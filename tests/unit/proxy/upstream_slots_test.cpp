#include "proxy/upstream_slots.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

// The upstream connections of one client connection: the first on the connection's own slot,
// the others counted as the client's connections (upstream_slots.hpp).
namespace airlock::proxy {
namespace {

const auto kClient = boost::asio::ip::make_address("192.0.2.7");

TEST(UpstreamSlots, TheFirstRidesOnTheConnectionTheOthersCountAsTheClients) {
  client_limiter limiter;
  ASSERT_TRUE(limiter.try_acquire(kClient, 100, 3));  // the client connection itself
  auto slots = std::make_shared<upstream_slots>(limiter, kClient);
  auto own = slots->take(100, 3);
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(limiter.total(), 1u) << "the first upstream takes no slot of the client's";
  std::vector<std::unique_ptr<upstream_slot>> more;
  for (int i = 0; i < 2; ++i) {
    more.push_back(slots->take(100, 3));
    ASSERT_NE(more.back(), nullptr) << i;
  }
  EXPECT_EQ(limiter.total(), 3u);
  EXPECT_EQ(slots->take(100, 3), nullptr) << "past max_connections_per_client";
  EXPECT_EQ(limiter.total(), 3u) << "a refusal counts nothing";
  more.pop_back();
  EXPECT_EQ(limiter.total(), 2u) << "an upstream that closes gives its slot back";
  EXPECT_NE(slots->take(100, 3), nullptr);  // (and that one closes again at once)
  own.reset();
  EXPECT_EQ(limiter.total(), 2u);
  auto again = slots->take(100, 3);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(limiter.total(), 2u) << "the connection's own place is free again";
}

TEST(UpstreamSlots, TheWholeProxysCapCountsToo) {
  client_limiter limiter;
  ASSERT_TRUE(limiter.try_acquire(kClient, 2, 100));
  auto slots = std::make_shared<upstream_slots>(limiter, kClient);
  auto own = slots->take(2, 100);
  auto second = slots->take(2, 100);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(slots->take(2, 100), nullptr) << "past max_connections";
}

}  // namespace
}  // namespace airlock::proxy
