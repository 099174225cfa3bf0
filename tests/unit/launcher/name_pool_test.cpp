#include "launcher/name_pool.hpp"

#include <gtest/gtest.h>

namespace airlock::launcher {
namespace {

TEST(LauncherNamePool, NamesKeepTheirAddress) {
  name_pool pool;
  auto a = pool.assign("allowed.test");
  auto b = pool.assign("other.test");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, 1u);
  EXPECT_EQ(*b, 2u);
  EXPECT_EQ(pool.assign("allowed.test"), a);
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool.v4_address(*a), (std::array<std::uint8_t, 4>{198, 18, 0, 1}));
  EXPECT_EQ(pool.v4_address(300), (std::array<std::uint8_t, 4>{198, 18, 1, 44}));
  const auto v6 = pool.v6_address(*b);
  EXPECT_EQ(v6[0], 0xfd);
  EXPECT_EQ(v6[15], 2);
  EXPECT_EQ(pool.name_of_v4(pool.v4_address(*a)), "allowed.test");
  EXPECT_EQ(pool.name_of_v6(v6), "other.test");
}

TEST(LauncherNamePool, UnknownAndForeignAddressesHaveNoName) {
  name_pool pool;
  pool.assign("a.test");
  EXPECT_FALSE(pool.name_of_v4({198, 18, 0, 0}));  // the network address: index 0
  EXPECT_FALSE(pool.name_of_v4({198, 18, 0, 2}));  // never handed out
  EXPECT_FALSE(pool.name_of_v4({198, 20, 0, 1}));  // outside 198.18.0.0/15
  EXPECT_FALSE(pool.name_of_v4({10, 0, 0, 1}));
  EXPECT_TRUE(name_pool::in_v4_pool({198, 19, 255, 255}));
  EXPECT_FALSE(name_pool::in_v4_pool({198, 17, 255, 255}));
  std::array<std::uint8_t, 16> v6 = pool.v6_address(1);
  EXPECT_TRUE(name_pool::in_v6_pool(v6));
  v6[8] = 1;  // an index far beyond anything handed out
  EXPECT_FALSE(pool.name_of_v6(v6));
  v6[0] = 0xfe;
  EXPECT_FALSE(name_pool::in_v6_pool(v6));
}

TEST(LauncherNamePool, FullPoolRefusesNewNamesButKeepsOldOnes) {
  name_pool pool(2);
  EXPECT_TRUE(pool.assign("a"));
  EXPECT_TRUE(pool.assign("b"));
  EXPECT_FALSE(pool.assign("c"));
  EXPECT_EQ(pool.assign("a"), 1u);
  // Capacity is capped by the IPv4 range whatever is asked for.
  name_pool huge(1u << 30);
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(huge.assign("n" + std::to_string(i)));
}

}  // namespace
}  // namespace airlock::launcher
