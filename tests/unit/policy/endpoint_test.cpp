#include "policy/endpoint.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

TEST(Endpoint, Parses) {
  auto e = parse_endpoint("127.0.0.1:3128");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->address().to_string(), "127.0.0.1");
  EXPECT_EQ(e->port(), 3128);
  e = parse_endpoint("[::1]:0");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->address().is_v6());
  EXPECT_EQ(e->port(), 0);
  e = parse_endpoint("0.0.0.0:65535");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->port(), 65535);
}

TEST(Endpoint, Rejects) {
  for (std::string_view bad :
       {"", ":3128", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80",
        "127.0.0.1:80x", "localhost:80", "::1:80", "[::1]80", "[::1", "[::1]:", "1.2.3.4:000080",
        "127.0.0.1:3128/"}) {
    EXPECT_FALSE(parse_endpoint(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace airlock::policy
