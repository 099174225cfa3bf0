#include "proxy/tunnel.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace airlock::proxy {
namespace {

using namespace std::chrono_literals;
using test::tcp;
namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out)
    c = static_cast<char>(rng());
  return out;
}

// Writes everything, then half-closes (an EOF the tunnel must pass on).
asio::awaitable<void> send_all_then_eof(tcp::socket& s, const std::string& data) {
  auto [ec, n] = co_await asio::async_write(s, asio::buffer(data), use_tuple);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(n, data.size());
  boost::system::error_code ignored;
  s.shutdown(tcp::socket::shutdown_send, ignored);
}

// Reads until EOF (or an error) into out; sets `eof` when it was a clean EOF.
asio::awaitable<void> read_to_eof(tcp::socket& s, std::string& out, bool& eof) {
  std::vector<char> buf(16 * 1024);
  for (;;) {
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
    out.append(buf.data(), n);
    if (ec) {
      eof = ec == asio::error::eof;
      co_return;
    }
  }
}

// agent <-> [client | splice | upstream] <-> origin, all on 127.0.0.1.
class TunnelTest : public ::testing::Test {
 protected:
  TunnelTest() {
    auto [a, c] = test::loopback_pair(io_);
    auto [u, o] = test::loopback_pair(io_);
    agent_.emplace(std::move(a));
    client_.emplace(std::move(c));
    upstream_.emplace(std::move(u));
    origin_.emplace(std::move(o));
  }
  ~TunnelTest() override {
    // Close everything and let any coroutine still running end before the sockets go.
    for (auto* s : {&agent_, &client_, &upstream_, &origin_}) {
      boost::system::error_code ignored;
      (*s)->close(ignored);
    }
    io_.restart();
    io_.run_for(1s);
  }

  void start_splice(std::chrono::milliseconds idle) {
    started_ = std::chrono::steady_clock::now();
    asio::co_spawn(io_, splice(*client_, *upstream_, idle),
                   [this](std::exception_ptr e, tunnel_totals t) {
                     EXPECT_FALSE(e);
                     totals_ = t;
                     ended_ = std::chrono::steady_clock::now();
                   });
  }
  template <class Awaitable>
  void spawn(Awaitable a, bool& done) {
    asio::co_spawn(io_, std::move(a), [&done](std::exception_ptr e) {
      EXPECT_FALSE(e);
      done = true;
    });
  }
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds t = 5s) {
    return test::run_until(io_, done, t);
  }
  std::chrono::milliseconds lifetime() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(ended_ - started_);
  }

  asio::io_context io_;
  std::optional<tcp::socket> agent_, client_, upstream_, origin_;
  std::optional<tunnel_totals> totals_;
  std::chrono::steady_clock::time_point started_, ended_;
};

TEST_F(TunnelTest, OneMebibyteEachWayIntact) {
  const auto up = random_bytes(1 << 20, 1), down = random_bytes(1 << 20, 2);
  std::string at_origin, at_agent;
  bool origin_eof = false, agent_eof = false;
  bool d1 = false, d2 = false, d3 = false, d4 = false;
  start_splice(5s);
  spawn(send_all_then_eof(*agent_, up), d1);
  spawn(send_all_then_eof(*origin_, down), d2);
  spawn(read_to_eof(*origin_, at_origin, origin_eof), d3);
  spawn(read_to_eof(*agent_, at_agent, agent_eof), d4);
  ASSERT_TRUE(run_until([&] { return totals_ && d1 && d2 && d3 && d4; }, 10s));
  EXPECT_TRUE(origin_eof);
  EXPECT_TRUE(agent_eof);
  EXPECT_EQ(at_origin.size(), up.size());
  EXPECT_EQ(at_agent.size(), down.size());
  EXPECT_TRUE(at_origin == up) << "client-to-upstream bytes changed";
  EXPECT_TRUE(at_agent == down) << "upstream-to-client bytes changed";
  EXPECT_EQ(totals_->client_to_upstream, up.size());
  EXPECT_EQ(totals_->upstream_to_client, down.size());
  EXPECT_LT(lifetime(), 5s) << "ended by the two EOFs, not by the idle timeout";
}

// The agent sends a request and half-closes; the origin sees EOF and still answers through the
// tunnel (RFC 9293 half-close, used by e.g. `nc -N` and some RPC clients).
TEST_F(TunnelTest, HalfClosePassesEofOnAndTheOtherWayStaysOpen) {
  start_splice(5s);
  bool done = false;
  std::string agent_got, origin_got;
  auto scenario = [&]() -> asio::awaitable<void> {
    co_await asio::async_write(*agent_, asio::buffer("request", 7), use_tuple);
    agent_->shutdown(tcp::socket::shutdown_send);
    bool origin_eof = false;
    co_await read_to_eof(*origin_, origin_got, origin_eof);
    EXPECT_TRUE(origin_eof) << "the half-close reached the origin";
    EXPECT_FALSE(totals_) << "the tunnel is still up for the answer";
    co_await asio::async_write(*origin_, asio::buffer("response", 8), use_tuple);
    std::array<char, 8> buf{};
    auto [ec, n] = co_await asio::async_read(*agent_, asio::buffer(buf), use_tuple);
    EXPECT_FALSE(ec) << ec.message();
    agent_got.assign(buf.data(), n);
    origin_->shutdown(tcp::socket::shutdown_send);
    std::string rest;
    bool agent_eof = false;
    co_await read_to_eof(*agent_, rest, agent_eof);
    EXPECT_TRUE(agent_eof);
    EXPECT_EQ(rest, "");
  };
  spawn(scenario(), done);
  ASSERT_TRUE(run_until([&] { return done && totals_; }));
  EXPECT_EQ(origin_got, "request");
  EXPECT_EQ(agent_got, "response");
  EXPECT_EQ(totals_->client_to_upstream, 7u);
  EXPECT_EQ(totals_->upstream_to_client, 8u);
}

TEST_F(TunnelTest, IdleTimeoutEndsItAndClosesBothSides) {
  start_splice(200ms);
  ASSERT_TRUE(run_until([&] { return totals_.has_value(); }, 5s));
  EXPECT_GE(lifetime(), 190ms);
  EXPECT_LT(lifetime(), 2s);
  EXPECT_EQ(totals_->client_to_upstream, 0u);
  EXPECT_EQ(totals_->upstream_to_client, 0u);
  // Both outer peers see the connection end.
  for (auto* peer : {&agent_, &origin_}) {
    ASSERT_TRUE(test::wait_readable(**peer, 2000ms));
    char c;
    boost::system::error_code ec;
    (*peer)->read_some(asio::buffer(&c, 1), ec);
    EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  }
}

TEST_F(TunnelTest, ActivityKeepsItAliveThenIdleEndsIt) {
  start_splice(200ms);
  bool done = false;
  std::string got;
  auto trickle = [&]() -> asio::awaitable<void> {
    asio::steady_timer t(co_await asio::this_coro::executor);
    std::array<char, 1> buf{};
    for (int i = 0; i < 6; ++i) {  // 6 x 100 ms: three times the idle timeout in all
      t.expires_after(100ms);
      co_await t.async_wait(use_tuple);
      EXPECT_FALSE(totals_) << "ended at byte " << i << " although bytes kept moving";
      co_await asio::async_write(*agent_, asio::buffer("x", 1), use_tuple);
      auto [ec, n] = co_await asio::async_read(*origin_, asio::buffer(buf), use_tuple);
      EXPECT_FALSE(ec);
      got.append(buf.data(), n);
    }
  };
  spawn(trickle(), done);
  ASSERT_TRUE(run_until([&] { return done && totals_; }, 5s));
  EXPECT_EQ(got, "xxxxxx");
  EXPECT_GE(lifetime(), 750ms);
  EXPECT_LT(lifetime(), 3s);
  EXPECT_EQ(totals_->client_to_upstream, 6u);
}

TEST_F(TunnelTest, IdleTimeoutAfterHalfClose) {
  // One side has said EOF and the other never answers: the idle timer still ends it.
  start_splice(200ms);
  agent_->shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(run_until([&] { return totals_.has_value(); }, 5s));
  EXPECT_GE(lifetime(), 190ms);
  EXPECT_LT(lifetime(), 2s);
}

TEST_F(TunnelTest, StalledReaderCannotHoldItOpen) {
  // The origin never reads: once the buffers are full the pump's write blocks, no byte moves,
  // and the idle timeout must still end the tunnel (back pressure must not defeat it).
  for (auto* s : {&agent_, &upstream_})
    (*s)->set_option(asio::socket_base::send_buffer_size(4096));
  for (auto* s : {&client_, &origin_})
    (*s)->set_option(asio::socket_base::receive_buffer_size(4096));
  const std::string flood(8 << 20, 'f');
  bool writer_done = false;
  auto writer = [&]() -> asio::awaitable<void> {
    co_await asio::async_write(*agent_, asio::buffer(flood), use_tuple);  // fails at the end
  };
  start_splice(200ms);
  spawn(writer(), writer_done);
  ASSERT_TRUE(run_until([&] { return totals_.has_value(); }, 5s));
  EXPECT_LT(lifetime(), 2s);
  EXPECT_GT(totals_->client_to_upstream, 0u);
  EXPECT_LT(totals_->client_to_upstream, flood.size());
  ASSERT_TRUE(run_until([&] { return writer_done; }, 3s)) << "the agent's write ended too";
}

TEST_F(TunnelTest, ResetByOneSideEndsIt) {
  start_splice(5s);
  // Abortive close (RST) by the origin: SO_LINGER 0.
  origin_->set_option(asio::socket_base::linger(true, 0));
  origin_->close();
  ASSERT_TRUE(run_until([&] { return totals_.has_value(); }, 3s))
      << "a reset must end the tunnel long before the idle timeout";
  EXPECT_LT(lifetime(), 2s);
  ASSERT_TRUE(test::wait_readable(*agent_, 2000ms));
  char c;
  boost::system::error_code ec;
  agent_->read_some(asio::buffer(&c, 1), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
}

}  // namespace
}  // namespace airlock::proxy
