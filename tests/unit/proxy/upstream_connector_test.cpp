#include "proxy/upstream_connector.hpp"

#include "fake_resolver.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>

#include <sys/socket.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::proxy {
namespace {

using namespace std::chrono_literals;
using core::errc;
using test::tcp;
namespace asio = boost::asio;
namespace ip = asio::ip;

net::normalized_host host(std::string_view text) {
  auto h = net::normalize_host(text);
  EXPECT_TRUE(h) << text;
  return h.value_or(net::normalized_host{});
}

net::cidr cidr(std::string_view text) {
  auto c = net::cidr::parse(text);
  EXPECT_TRUE(c) << text;
  return c.value_or(net::cidr{});
}

const ip::address loopback = ip::make_address("127.0.0.1");

class UpstreamConnectorTest : public ::testing::Test {
 protected:
  UpstreamConnectorTest() : listener_(io_, tcp::endpoint(loopback, 0)), stream_(io_) {
    listener_.non_blocking(true);
  }

  std::uint16_t listener_port() const { return listener_.local_endpoint().port(); }

  // A port on 127.0.0.1 with nothing listening (bound once, then released).
  std::uint16_t closed_port() {
    tcp::acceptor a(io_, tcp::endpoint(loopback, 0));
    auto port = a.local_endpoint().port();
    a.close();
    return port;
  }

  // Whether the listener got a connection (it must not when the guard refuses).
  bool listener_was_reached() {
    tcp::socket s(io_);
    boost::system::error_code ec;
    listener_.accept(s, ec);
    return !ec;
  }

  connect_outcome connect(const net::address_guard& guard, const upstream_request& req,
                          std::chrono::milliseconds limit = 5s) {
    // Shared, so a handler that runs late (after a failed wait) writes to live memory.
    auto out = std::make_shared<std::optional<connect_outcome>>();
    asio::co_spawn(io_, connect_upstream(stream_, guard, req),
                   [out](std::exception_ptr e, connect_outcome o) {
                     EXPECT_FALSE(e);
                     *out = std::move(o);
                   });
    auto done = [&] { return out->has_value(); };
    bool finished = test::run_until(io_, done, limit);
    EXPECT_TRUE(finished) << "connect_upstream did not finish in time";
    if (!finished) {
      stream_.close();
      test::run_until(io_, done, 2s);
    }
    return out->value_or(connect_outcome{errc::internal_error, "did not finish", {}, {}});
  }

  asio::io_context io_;
  tcp::acceptor listener_;
  boost::beast::tcp_stream stream_;
  // Refuses every special-purpose address (so 127.0.0.1) unless an allow CIDR names it; no own
  // endpoints, no interface addresses.
  net::address_guard strict_{true, {}, {}, {}};
};

TEST_F(UpstreamConnectorTest, ToStringOfEndpoints) {
  EXPECT_EQ(to_string(tcp::endpoint(ip::make_address("1.2.3.4"), 80)), "1.2.3.4:80");
  EXPECT_EQ(to_string(tcp::endpoint(ip::make_address("::1"), 443)), "[::1]:443");
  EXPECT_EQ(to_string(tcp::endpoint(ip::make_address("2001:db8::5"), 8080)), "[2001:db8::5]:8080");
}

TEST_F(UpstreamConnectorTest, LoopbackLiteralRefusedWithCategory) {
  auto h = host("127.0.0.1");
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::destination_ip_prohibited);
  EXPECT_EQ(out.detail, "127.0.0.1 is loopback");
  EXPECT_FALSE(stream_.socket().is_open());
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, OtherSpellingsOfLoopbackRefused) {
  for (const char* spelling :
       {"127.1", "0x7f000001", "2130706433", "[::ffff:127.0.0.1]", "0.0.0.0", "::1", "[::]"}) {
    auto h = host(spelling);
    upstream_request req;
    req.host = &h;
    req.port = listener_port();
    auto out = connect(strict_, req);
    EXPECT_EQ(out.error, errc::destination_ip_prohibited) << spelling;
    EXPECT_FALSE(out.detail.empty()) << spelling;
  }
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, ExtraAllowLetsTheRuleReachLoopback) {
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.0/8")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  ASSERT_EQ(out.error, errc::ok) << out.detail;
  EXPECT_EQ(out.endpoint, tcp::endpoint(loopback, listener_port()));
  EXPECT_TRUE(stream_.socket().is_open());
  EXPECT_EQ(stream_.socket().remote_endpoint(), out.endpoint);
  EXPECT_GE(out.connect_time.count(), 0);
  EXPECT_LT(out.connect_time, 5s);
  EXPECT_TRUE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, PolicyWideAllowAlsoWorks) {
  net::address_guard guard(true, {cidr("127.0.0.1/32")}, {}, {});
  auto h = host("127.0.0.1");
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  auto out = connect(guard, req);
  EXPECT_EQ(out.error, errc::ok) << out.detail;
  EXPECT_TRUE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, AllowForAnotherAddressDoesNotHelp) {
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.2/32"), cidr("10.0.0.0/8")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.extra_allow = allow;
  EXPECT_EQ(connect(strict_, req).error, errc::destination_ip_prohibited);
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, OwnEndpointRefusedEvenWhenAllowed) {
  // Loop prevention: the proxy's own listener is never a destination, whatever the rule says.
  net::address_guard guard(true, {}, {tcp::endpoint(loopback, listener_port())}, {});
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.0/8")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.extra_allow = allow;
  auto out = connect(guard, req);
  EXPECT_EQ(out.error, errc::destination_ip_prohibited);
  EXPECT_NE(out.detail.find("proxy_itself"), std::string::npos) << out.detail;
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, PinnedAddressesAreUsedWithoutDns) {
  auto h = host("pinned.invalid");  // would not resolve: the pin must be used instead
  const std::vector<ip::address> pinned{loopback};
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.pinned = pinned;
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  ASSERT_EQ(out.error, errc::ok) << out.detail;
  EXPECT_EQ(out.endpoint, tcp::endpoint(loopback, listener_port()));
  EXPECT_TRUE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, AnyProhibitedPinnedAddressRefusesAll) {
  auto h = host("pinned.invalid");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  for (const auto& pinned : {std::vector<ip::address>{loopback, ip::make_address("127.0.0.2")},
                             std::vector<ip::address>{ip::make_address("127.0.0.2"), loopback}}) {
    upstream_request req;
    req.host = &h;
    req.port = listener_port();
    req.pinned = pinned;
    req.extra_allow = allow;
    auto out = connect(strict_, req);
    EXPECT_EQ(out.error, errc::destination_ip_prohibited);
    EXPECT_EQ(out.detail, "pinned.invalid resolves to 127.0.0.2 (loopback)");
    EXPECT_FALSE(stream_.socket().is_open());
  }
  EXPECT_FALSE(listener_was_reached()) << "not even the allowed address was connected to";
}

TEST_F(UpstreamConnectorTest, FallsBackToTheNextAllowedAddress) {
  // 127.0.0.2 has no listener on this port: refused, then 127.0.0.1 is tried.
  auto h = host("pinned.invalid");
  const std::vector<ip::address> pinned{ip::make_address("127.0.0.2"), loopback};
  const std::vector<net::cidr> allow{cidr("127.0.0.0/8")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.pinned = pinned;
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  ASSERT_EQ(out.error, errc::ok) << out.detail;
  EXPECT_EQ(out.endpoint, tcp::endpoint(loopback, listener_port()));
}

TEST_F(UpstreamConnectorTest, ClosedPortIsConnectRefused) {
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  const auto port = closed_port();
  upstream_request req;
  req.host = &h;
  req.port = port;
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::connect_refused);
  EXPECT_EQ(out.detail.rfind("connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u)
      << out.detail;
}

TEST_F(UpstreamConnectorTest, RefusedConnectLeavesTheStreamClosed) {
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.host = &h;
  req.port = closed_port();
  req.extra_allow = allow;
  ASSERT_EQ(connect(strict_, req).error, errc::connect_refused);
  EXPECT_FALSE(stream_.socket().is_open());
}

TEST_F(UpstreamConnectorTest, ConnectTimeout) {
  // A listener whose accept queue is full drops further SYNs (Linux), so the connect hangs
  // until the connect timeout: a deterministic black hole on loopback.
  tcp::acceptor full(io_);
  full.open(tcp::v4());
  full.bind(tcp::endpoint(loopback, 0));
  full.listen(0);
  std::vector<tcp::socket> fillers;
  for (int i = 0; i < 4; ++i) {
    fillers.emplace_back(io_);
    fillers.back().open(tcp::v4());
    fillers.back().native_non_blocking(true);
    // Raw connect(2): asio's synchronous connect would wait for the handshake.
    const auto target = full.local_endpoint();
    ::connect(fillers.back().native_handle(), target.data(), target.size());
  }
  std::this_thread::sleep_for(50ms);
  auto h = host("127.0.0.1");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.host = &h;
  req.port = full.local_endpoint().port();
  req.extra_allow = allow;
  req.connect_timeout = 300ms;
  const auto started = std::chrono::steady_clock::now();
  auto out = connect(strict_, req);
  const auto took = std::chrono::steady_clock::now() - started;
  // The timeout fired (the connect itself never completes): the error says so, and it did
  // not fire early. How soon after 300 ms it fired depends on the machine, so no upper bound
  // beyond connect()'s own limit.
  EXPECT_EQ(out.error, errc::connect_timeout) << out.detail;
  EXPECT_GE(took, 250ms);
  EXPECT_FALSE(stream_.socket().is_open());
}

TEST_F(UpstreamConnectorTest, LocalhostNameResolvesToLoopbackAndIsRefused) {
  auto h = host("localhost");
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.dns_timeout = 2s;
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::destination_ip_prohibited) << out.detail;
  EXPECT_EQ(out.detail.rfind("localhost resolves to ", 0), 0u) << out.detail;
  EXPECT_NE(out.detail.find("(loopback)"), std::string::npos) << out.detail;
  EXPECT_FALSE(listener_was_reached());
}

// The names below are answered by fake_resolver.cpp (no DNS traffic).

TEST_F(UpstreamConnectorTest, ResolvedNameIsGuardedThenConnected) {
  auto h = host("origin.test");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  ASSERT_EQ(out.error, errc::ok) << out.detail;
  EXPECT_EQ(out.endpoint, tcp::endpoint(loopback, listener_port()));
  EXPECT_TRUE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, ResolvedNameWithoutAllowIsRefused) {
  auto h = host("origin.test");
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::destination_ip_prohibited);
  EXPECT_EQ(out.detail, "origin.test resolves to 127.0.0.1 (loopback)");
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, AnyProhibitedResolvedAddressRefusesAll) {
  auto h = host("mixed.test");  // 127.0.0.1 (allowed below) and 127.0.0.2 (not allowed)
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.extra_allow = allow;
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::destination_ip_prohibited);
  EXPECT_EQ(out.detail, "mixed.test resolves to 127.0.0.2 (loopback)");
  EXPECT_FALSE(listener_was_reached());
}

TEST_F(UpstreamConnectorTest, NoAddressesIsDnsError) {
  auto h = host("empty.test");
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  auto out = connect(strict_, req);
  EXPECT_EQ(out.error, errc::dns_error);
  EXPECT_EQ(out.detail.rfind("cannot resolve empty.test: ", 0), 0u) << out.detail;
}

TEST_F(UpstreamConnectorTest, DnsTimeoutIsEnforced) {
  auto h = host("slow.test");  // getaddrinfo blocks until released
  test::hold_slow_lookups();
  upstream_request req;
  req.host = &h;
  req.port = listener_port();
  req.dns_timeout = 200ms;
  auto out = connect(strict_, req);
  // The session finished while its lookup is still blocked: it did not wait for the resolver.
  EXPECT_EQ(test::slow_lookups_waiting(), 1)
      << "the session waited for the resolver past dns_timeout";
  test::release_slow_lookups();
  // The released lookup leaves its wait on the resolver's thread, later: a test that holds
  // lookups again before then would keep it waiting, and count it as its own.
  EXPECT_TRUE(test::run_until(
      io_, [] { return test::slow_lookups_waiting() == 0; }, 20s));
  EXPECT_EQ(out.error, errc::dns_timeout) << out.detail;
  EXPECT_EQ(out.detail, "resolving slow.test timed out");
}

TEST_F(UpstreamConnectorTest, SlowLookupDoesNotDelayOtherSessions) {
  // Two sessions on one worker: one asks for a name whose lookup stalls, the other for a name
  // that answers at once. The second must not wait for the first.
  auto slow = host("slow.test");
  auto fast = host("origin.test");
  const std::vector<net::cidr> allow{cidr("127.0.0.1/32")};
  upstream_request slow_req;
  slow_req.host = &slow;
  slow_req.port = listener_port();
  slow_req.dns_timeout = 60s;  // ends only when the lookup is released below
  test::hold_slow_lookups();
  upstream_request fast_req;
  fast_req.host = &fast;
  fast_req.port = listener_port();
  fast_req.extra_allow = allow;
  boost::beast::tcp_stream slow_stream(io_);
  std::optional<connect_outcome> slow_out, fast_out;
  int slow_blocked_when_fast_done = -1;
  asio::co_spawn(io_, connect_upstream(slow_stream, strict_, slow_req),
                 [&](std::exception_ptr, connect_outcome o) { slow_out = std::move(o); });
  // The slow lookup is under way (blocked in the resolver) before the fast session starts.
  const bool slow_blocked = test::run_until(
      io_, [&] { return test::slow_lookups_waiting() == 1; }, 20s);
  if (!slow_blocked) test::release_slow_lookups();
  ASSERT_TRUE(slow_blocked) << "the slow lookup never started";
  asio::co_spawn(io_, connect_upstream(stream_, strict_, fast_req),
                 [&](std::exception_ptr, connect_outcome o) {
                   fast_out = std::move(o);
                   slow_blocked_when_fast_done = test::slow_lookups_waiting();
                 });
  const bool fast_finished = test::run_until(
      io_, [&] { return fast_out.has_value(); }, 20s);
  // The fast session finished while the slow lookup was still blocked: it did not queue
  // behind it. Then let the slow one go, so that both sessions end.
  test::release_slow_lookups();
  ASSERT_TRUE(fast_finished) << "the fast lookup queued behind the slow one";
  ASSERT_TRUE(test::run_until(
      io_, [&] { return slow_out.has_value(); }, 20s));
  EXPECT_EQ(fast_out->error, errc::ok) << fast_out->detail;
  EXPECT_EQ(slow_blocked_when_fast_done, 1) << "the fast lookup queued behind the slow one";
}

TEST_F(UpstreamConnectorTest, UnresolvableNameIsDnsError) {
  // RFC 6761: .invalid never resolves, so this needs no network.
  auto h = host("does-not-exist.invalid");
  upstream_request req;
  req.host = &h;
  req.port = 80;
  req.dns_timeout = 2s;
  auto out = connect(strict_, req, 5s);
  EXPECT_TRUE(out.error == errc::dns_error || out.error == errc::dns_timeout)
      << core::name(out.error) << ": " << out.detail;
  EXPECT_NE(out.detail.find("does-not-exist.invalid"), std::string::npos) << out.detail;
  EXPECT_FALSE(stream_.socket().is_open());
}

}  // namespace
}  // namespace airlock::proxy
