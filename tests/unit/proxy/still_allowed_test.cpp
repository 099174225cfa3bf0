// still_allowed: whether a connection made earlier (pooled, or the one a CONNECT made to check
// its origin) may serve a request under the policy as it is now.
#include "proxy/upstream_connector.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace airlock::proxy {
namespace {

namespace ip = boost::asio::ip;
using tcp = ip::tcp;

net::cidr cidr(std::string_view text) {
  auto c = net::cidr::parse(text);
  EXPECT_TRUE(c) << text;
  return c.value_or(net::cidr{});
}

TEST(StillAllowed, FollowsTheGuardThePinsAndTheProxysOwnEndpoints) {
  const tcp::endpoint peer(ip::make_address("127.0.0.1"), 8443);
  const net::address_guard strict(true, {}, {}, {});
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.port = 8443;
  // Loopback is special: refused unless the rule allows it.
  EXPECT_FALSE(still_allowed(peer, strict, req));
  req.extra_allow = allow;
  EXPECT_TRUE(still_allowed(peer, strict, req));
  // The rule now pins other addresses: this connection no longer qualifies.
  const std::vector<ip::address> pinned{ip::make_address("127.0.0.2")};
  req.pinned = pinned;
  EXPECT_FALSE(still_allowed(peer, strict, req));
  const std::vector<ip::address> same{ip::make_address("127.0.0.1")};
  req.pinned = same;
  EXPECT_TRUE(still_allowed(peer, strict, req));
  // The proxy's own listener is never a destination.
  const net::address_guard own(true, {}, {peer}, {});
  req.own = &own;
  EXPECT_FALSE(still_allowed(peer, strict, req));
}

}  // namespace
}  // namespace airlock::proxy
