#include "proxy/connection_pool.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace airlock::proxy {
namespace {

using namespace std::chrono_literals;
using test::loopback_pair;
using test::tcp;
namespace asio = boost::asio;

// True when the peer of `s` observes EOF (the pool closed its end).
bool peer_sees_eof(tcp::socket& peer) {
  if (!test::wait_readable(peer, 2000ms)) return false;
  char c;
  boost::system::error_code ec;
  peer.read_some(asio::buffer(&c, 1), ec);
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

class ConnectionPoolTest : public ::testing::Test {
 protected:
  // An upstream connection: .first goes into the pool, .second plays the origin server.
  std::pair<tcp::socket, tcp::socket> conn() { return loopback_pair(io_); }
  // A socket as an exchange pools it, with its stream and read buffer.
  plain_upstream_ptr pooled(tcp::socket s) {
    auto up = std::make_unique<plain_upstream>(io_.get_executor());
    up->stream.socket() = std::move(s);
    return up;
  }
  asio::io_context io_;
};

TEST_F(ConnectionPoolTest, TakeOnEmpty) {
  connection_pool pool;
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_FALSE(pool.take("h.test:80"));
  EXPECT_FALSE(pool.take(""));
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(ConnectionPoolTest, PutThenTakeGivesTheSameLiveConnection) {
  connection_pool pool;
  auto [up, origin] = conn();
  const auto port = up.local_endpoint().port();
  pool.put("h.test:80", pooled(std::move(up)));
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_FALSE(pool.take("h.test:81")) << "keys do not mix";
  EXPECT_FALSE(pool.take("other.test:80"));
  EXPECT_EQ(pool.size(), 1u);

  auto got = pool.take("h.test:80");
  ASSERT_TRUE(got);
  EXPECT_EQ(pool.size(), 0u);
  ASSERT_TRUE((*got)->stream.socket().is_open());
  EXPECT_EQ((*got)->stream.socket().local_endpoint().port(), port);
  // It still works both ways.
  asio::write((*got)->stream.socket(), asio::buffer("ping", 4));
  std::array<char, 4> buf{};
  asio::read(origin, asio::buffer(buf));
  EXPECT_EQ(std::string(buf.data(), 4), "ping");
  asio::write(origin, asio::buffer("pong", 4));
  asio::read((*got)->stream.socket(), asio::buffer(buf));
  EXPECT_EQ(std::string(buf.data(), 4), "pong");

  EXPECT_FALSE(pool.take("h.test:80")) << "taken means gone";
}

TEST_F(ConnectionPoolTest, TakeGivesBackThePeerPutWasTold) {
  connection_pool pool;
  auto [up, origin] = conn();
  const auto peer = up.remote_endpoint();
  pool.put("h.test:80", pooled(std::move(up)), peer);
  tcp::endpoint got_peer;
  auto got = pool.take("h.test:80", &got_peer);
  ASSERT_TRUE(got);
  EXPECT_EQ(got_peer, peer);
  // Emptied, the key is still usable: put and take again, and a connection put without its
  // peer gives an unspecified one back (the caller then asks the socket).
  pool.put("h.test:80", std::move(*got));
  got_peer = peer;
  ASSERT_TRUE(pool.take("h.test:80", &got_peer));
  EXPECT_EQ(got_peer.port(), 0);
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(ConnectionPoolTest, PeerClosedIsNotReturned) {
  connection_pool pool;
  auto [up, origin] = conn();
  pool.put("k", pooled(std::move(up)));
  origin.close();
  // Loopback delivers the FIN at once; the pause only keeps the test off the race.
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(pool.take("k"));
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(ConnectionPoolTest, UnsolicitedDataIsNotReturned) {
  connection_pool pool;
  auto [up, origin] = conn();
  asio::write(origin, asio::buffer("HTTP/1.1 200 OK\r\n\r\n", 19));
  ASSERT_TRUE(test::wait_readable(up, 2000ms));
  pool.put("k", pooled(std::move(up)));
  EXPECT_FALSE(pool.take("k"));
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(peer_sees_eof(origin)) << "the dropped connection is closed, not leaked";
}

TEST_F(ConnectionPoolTest, SkipsDeadEntriesAndReturnsALiveOne) {
  connection_pool pool;
  auto [good, good_origin] = conn();
  auto [dead, dead_origin] = conn();
  auto [chatty, chatty_origin] = conn();
  const auto good_port = good.local_endpoint().port();
  pool.put("k", pooled(std::move(good)));
  pool.put("k", pooled(std::move(dead)));
  pool.put("k", pooled(std::move(chatty)));
  EXPECT_EQ(pool.size(), 3u);
  dead_origin.close();
  asio::write(chatty_origin, asio::buffer("x", 1));
  std::this_thread::sleep_for(20ms);

  auto got = pool.take("k");
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)->stream.socket().local_endpoint().port(), good_port);
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(peer_sees_eof(chatty_origin));
  EXPECT_FALSE(pool.take("k"));
}

TEST_F(ConnectionPoolTest, MaxPerKey) {
  connection_pool pool({.max_per_key = 2, .max_total = 100, .max_idle = 60s});
  std::vector<tcp::socket> origins;
  for (int i = 0; i < 3; ++i) {
    auto [up, origin] = conn();
    pool.put("a", pooled(std::move(up)));
    origins.push_back(std::move(origin));
  }
  EXPECT_EQ(pool.size(), 2u);
  EXPECT_TRUE(peer_sees_eof(origins[2])) << "the one over the cap is closed";
  auto [other, other_origin] = conn();
  pool.put("b", pooled(std::move(other)));
  EXPECT_EQ(pool.size(), 3u) << "the cap is per key";
  EXPECT_TRUE(pool.take("a"));
  EXPECT_TRUE(pool.take("a"));
  EXPECT_FALSE(pool.take("a"));
  EXPECT_TRUE(pool.take("b"));
  EXPECT_EQ(pool.size(), 0u);
}

TEST_F(ConnectionPoolTest, MaxTotal) {
  connection_pool pool({.max_per_key = 10, .max_total = 3, .max_idle = 60s});
  std::vector<tcp::socket> origins;
  for (int i = 0; i < 5; ++i) {
    auto [up, origin] = conn();
    pool.put("k" + std::to_string(i), pooled(std::move(up)));
    origins.push_back(std::move(origin));
  }
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_TRUE(peer_sees_eof(origins[3]));
  EXPECT_TRUE(peer_sees_eof(origins[4]));
  EXPECT_FALSE(pool.take("k3"));
  EXPECT_FALSE(pool.take("k4"));
  // Taking one frees room for another.
  EXPECT_TRUE(pool.take("k0"));
  auto [up, origin] = conn();
  pool.put("k9", pooled(std::move(up)));
  EXPECT_EQ(pool.size(), 3u);
  EXPECT_TRUE(pool.take("k9"));
}

TEST_F(ConnectionPoolTest, ZeroCapsKeepNothing) {
  connection_pool pool({.max_per_key = 0, .max_total = 10, .max_idle = 60s});
  auto [up, origin] = conn();
  pool.put("k", pooled(std::move(up)));
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_FALSE(pool.take("k"));
  EXPECT_TRUE(peer_sees_eof(origin));
}

TEST_F(ConnectionPoolTest, IdleExpiryOnTake) {
  connection_pool pool({.max_per_key = 10, .max_total = 10, .max_idle = 30ms});
  auto [up, origin] = conn();
  pool.put("k", pooled(std::move(up)));
  std::this_thread::sleep_for(60ms);
  EXPECT_FALSE(pool.take("k"));
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_TRUE(peer_sees_eof(origin));
}

TEST_F(ConnectionPoolTest, IdleExpirySweptOnPut) {
  connection_pool pool({.max_per_key = 10, .max_total = 10, .max_idle = 30ms});
  auto [old1, origin1] = conn();
  auto [old2, origin2] = conn();
  pool.put("a", pooled(std::move(old1)));
  pool.put("b", pooled(std::move(old2)));
  EXPECT_EQ(pool.size(), 2u);
  std::this_thread::sleep_for(60ms);
  auto [fresh, fresh_origin] = conn();
  pool.put("c", pooled(std::move(fresh)));
  EXPECT_EQ(pool.size(), 1u) << "expired entries of other keys are closed on put";
  EXPECT_TRUE(peer_sees_eof(origin1));
  EXPECT_TRUE(peer_sees_eof(origin2));
  EXPECT_TRUE(pool.take("c"));
}

TEST_F(ConnectionPoolTest, ExpiredEntriesDoNotBlockTheTotalCap) {
  connection_pool pool({.max_per_key = 10, .max_total = 1, .max_idle = 30ms});
  auto [old, old_origin] = conn();
  pool.put("a", pooled(std::move(old)));
  std::this_thread::sleep_for(60ms);
  auto [fresh, fresh_origin] = conn();
  pool.put("b", pooled(std::move(fresh)));
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_TRUE(pool.take("b"));
}

TEST_F(ConnectionPoolTest, Clear) {
  connection_pool pool;
  std::vector<tcp::socket> origins;
  for (int i = 0; i < 4; ++i) {
    auto [up, origin] = conn();
    pool.put(i % 2 ? "a" : "b", pooled(std::move(up)));
    origins.push_back(std::move(origin));
  }
  EXPECT_EQ(pool.size(), 4u);
  pool.clear();
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_FALSE(pool.take("a"));
  EXPECT_FALSE(pool.take("b"));
  for (auto& o : origins)
    EXPECT_TRUE(peer_sees_eof(o));
  // Usable after clear.
  auto [up, origin] = conn();
  pool.put("a", pooled(std::move(up)));
  EXPECT_TRUE(pool.take("a"));
}

TEST_F(ConnectionPoolTest, ClosedSocketIsNotReturned) {
  connection_pool pool;
  tcp::socket never_opened(io_);
  pool.put("k", pooled(std::move(never_opened)));
  EXPECT_EQ(pool.size(), 0u) << "a closed connection is not kept";
  EXPECT_FALSE(pool.take("k"));
}

TEST_F(ConnectionPoolTest, NoConnectionIsNotKept) {
  connection_pool pool;
  pool.put("k", plain_upstream_ptr{});
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_FALSE(pool.take("k"));
}

TEST_F(ConnectionPoolTest, TheStreamAndItsBufferComeBackWithTheSocket) {
  // The point of pooling them together: an exchange on a pooled connection builds neither again
  // (Beast's stream is a shared state with three timers; the buffer keeps its room).
  connection_pool pool;
  auto [up, origin] = conn();
  auto wrapped = pooled(std::move(up));
  wrapped->buffer.reserve(4096);
  const plain_upstream* const same = wrapped.get();
  const void* const room = wrapped->buffer.data().data();
  pool.put("k", std::move(wrapped));
  auto got = pool.take("k");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->get(), same);
  EXPECT_GE((*got)->buffer.capacity(), 4096u);
  EXPECT_EQ((*got)->buffer.data().data(), room);
  EXPECT_EQ((*got)->buffer.size(), 0u);
}

TEST_F(ConnectionPoolTest, OnlyTheOwnerTakesAConnection) {
  connection_pool pool;
  auto owner = std::make_shared<int>(1);
  auto other = std::make_shared<int>(2);
  auto [up, origin] = conn();
  const auto port = up.local_endpoint().port();
  pool.put("k", pooled(std::move(up)), {}, owner);
  auto [up2, origin2] = conn();
  pool.put("k", pooled(std::move(up2)), {}, other);
  EXPECT_EQ(pool.size(), 2u);
  // The other owner's connection is met first (the newest): it is closed on the way.
  auto got = pool.take("k", nullptr, owner.get());
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)->stream.socket().local_endpoint().port(), port);
  EXPECT_TRUE(peer_sees_eof(origin2));
  EXPECT_EQ(pool.size(), 0u);
  auto [up3, origin3] = conn();
  pool.put("k", pooled(std::move(up3)), {}, owner);
  EXPECT_FALSE(pool.take("k")) << "a connection with an owner is not handed out without one";
}

TEST_F(ConnectionPoolTest, TheOwnerIsHeldWhileItsConnectionWaits) {
  // Held, so that a later owner allocated at the same address cannot take the connection.
  connection_pool pool;
  auto owner = std::make_shared<int>(1);
  std::weak_ptr<int> watch = owner;
  auto [up, origin] = conn();
  pool.put("k", pooled(std::move(up)), {}, std::move(owner));
  EXPECT_FALSE(watch.expired());
  pool.clear();
  EXPECT_TRUE(watch.expired());
}

TEST(TlsPoolKey, NamePortAndAlpnOfferAllCount) {
  EXPECT_EQ(tls_pool_key("api.test", 443, false), "api.test:443");
  EXPECT_NE(tls_pool_key("api.test", 443, true), tls_pool_key("api.test", 443, false));
  EXPECT_NE(tls_pool_key("api.test", 443, false), tls_pool_key("api.test", 8443, false));
  EXPECT_NE(tls_pool_key("a.api.test", 443, false), tls_pool_key("api.test", 443, false));
}

TEST_F(ConnectionPoolTest, TlsStreamsArePooledByTheirSocket) {
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  tls_connection_pool pool({.max_per_key = 10, .max_total = 10, .max_idle = 30ms});
  auto [up, origin] = conn();
  const auto port = up.local_endpoint().port();
  tls_upstream stream(boost::beast::tcp_stream(std::move(up)), ctx);
  pool.put("k", std::move(stream));
  auto got = pool.take("k");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->socket().local_endpoint().port(), port);
  // Bytes waiting (a close_notify alert, say) make it unusable: closed, not handed out.
  pool.put("k", std::move(*got));
  asio::write(origin, asio::buffer("x", 1));
  std::this_thread::sleep_for(20ms);  // (loopback delivers at once; margin for a busy host)
  EXPECT_FALSE(pool.take("k"));
  EXPECT_TRUE(peer_sees_eof(origin));
}

}  // namespace
}  // namespace airlock::proxy
