#include "launcher/address.hpp"

#include <gtest/gtest.h>

namespace airlock::launcher {
namespace {

TEST(LauncherAddress, ParsesLiteralsAndLocalhost) {
  auto v4 = parse_host_port("127.0.0.1:3128");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->family(), AF_INET);
  EXPECT_EQ(to_string(*v4), "127.0.0.1:3128");
  auto v6 = parse_host_port("[::1]:8080");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->family(), AF_INET6);
  EXPECT_EQ(to_string(*v6), "[::1]:8080");
  auto local = parse_host_port("localhost:1");
  ASSERT_TRUE(local);
  EXPECT_EQ(to_string(*local), "127.0.0.1:1");
}

TEST(LauncherAddress, RejectsEverythingElse) {
  for (auto bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:80x",
                   "::1:80", "[::1]80", "[::1]:", "proxy.example:3128", "1.2.3:80", ":80"}) {
    EXPECT_FALSE(parse_host_port(bad)) << bad;
  }
}

}  // namespace
}  // namespace airlock::launcher
