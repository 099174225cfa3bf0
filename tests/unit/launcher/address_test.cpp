#include "launcher/address.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

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

TEST(LauncherAddress, UnixSocketForTheRelayListener) {
  auto u = parse_proxy_address("unix:/run/airlock/relay.sock");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->family(), AF_UNIX);
  EXPECT_EQ(to_string(*u), "unix:/run/airlock/relay.sock");
  EXPECT_EQ(u->length, offsetof(sockaddr_un, sun_path) + 23 + 1);  // the path and its NUL
  EXPECT_EQ(unix_path_of("unix:/x"), "/x");
  EXPECT_FALSE(unix_path_of("127.0.0.1:1"));
  // TCP forms still work through the same door.
  EXPECT_EQ(to_string(*parse_proxy_address("127.0.0.1:3128")), "127.0.0.1:3128");
  // The longest path that fits sun_path with its NUL, and one byte more.
  const std::string longest = "/" + std::string(sizeof(sockaddr_un::sun_path) - 2, 'a');
  EXPECT_TRUE(parse_proxy_address("unix:" + longest));
  EXPECT_FALSE(parse_proxy_address("unix:" + longest + "a"));
  for (const std::string& bad : std::vector<std::string>{
           "unix:", "unix:relative.sock", "unix:@abstract", "unix", std::string("unix:/a\0b", 9)}) {
    EXPECT_FALSE(parse_proxy_address(bad)) << bad;
  }
  // parse_host_port alone never takes a Unix path.
  EXPECT_FALSE(parse_host_port("unix:/run/airlock/relay.sock"));
}

}  // namespace
}  // namespace airlock::launcher
