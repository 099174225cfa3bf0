// tls::socket_stream on real loopback TCP connections, both ends in one io_context: the
// handshake (with bytes read before it), data both ways (a mebibyte, so that sends fill the
// socket and OpenSSL wants to write), a clean close and a truncated one, the deadline (passed,
// moved later, moved earlier, cleared, passed before the operation), cancellation, what
// nothing_buffered sees, buffers given back while idle, OpenSSL's errors, and a stale entry in
// the thread's error queue.
#include "tls/socket_stream.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "handshake_util.hpp"

namespace airlock::tls {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using stream = socket_stream<boost::beast::tcp_stream>;
using namespace std::chrono_literals;
constexpr auto tuple = net::as_tuple(net::use_awaitable);

net::awaitable<void> sleep_for(std::chrono::milliseconds d) {
  net::steady_timer t(co_await net::this_coro::executor, d);
  co_await t.async_wait(tuple);
}

class SocketStreamTest : public test::TlsHandshakeTest {
 protected:
  void SetUp() override {
    TlsHandshakeTest::SetUp();
    if (HasFatalFailure()) return;
    leaf_ = mint("origin.test");
    ASSERT_TRUE(leaf_);
    tcp::acceptor acceptor(ioc_, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    tcp::socket client_socket(ioc_);
    tcp::socket server_socket(ioc_);
    client_socket.connect(acceptor.local_endpoint());
    acceptor.accept(server_socket);
    client_.emplace(boost::beast::tcp_stream(std::move(client_socket)), *client_ctx_);
    server_.emplace(boost::beast::tcp_stream(std::move(server_socket)), *server_ctx_);
    std::string error;
    ASSERT_TRUE(use_leaf(server_->native_handle(), *leaf_, error)) << error;
    test::upstream("origin.test")(client_->native_handle());
  }

  // Runs both sides to the end (bounded: a hung operation fails the test, it does not hang it).
  void run(std::function<net::awaitable<void>()> server_side,
           std::function<net::awaitable<void>()> client_side) {
    int done = 0;
    // (Stopped when both are done: a stream's deadline timer may still be pending.)
    auto side = [&](auto& body) -> net::awaitable<void> {
      co_await body();
      if (++done == 2) ioc_.stop();
    };
    net::co_spawn(ioc_, side(server_side), net::detached);
    net::co_spawn(ioc_, side(client_side), net::detached);
    ioc_.run_for(20s);
    EXPECT_EQ(done, 2) << "an operation did not end";
  }

  net::awaitable<void> handshake_server() {
    auto [ec] = co_await server_->async_handshake(net::ssl::stream_base::server, tuple);
    EXPECT_FALSE(ec) << ec.message();
  }
  net::awaitable<void> handshake_client() {
    auto [ec] = co_await client_->async_handshake(net::ssl::stream_base::client, tuple);
    EXPECT_FALSE(ec) << ec.message();
  }

  // The server waits for one byte; `ec` is how the read ended.
  net::awaitable<void> server_reads_one(boost::system::error_code& ec) {
    char c;
    auto [read_ec, n] = co_await server_->async_read_some(net::buffer(&c, 1), tuple);
    ec = read_ec;
  }

  // Both handshakes, then `server_side` and `client_side` at once.
  void after_handshakes(std::function<net::awaitable<void>()> server_side,
                        std::function<net::awaitable<void>()> client_side) {
    run(
        [&]() -> net::awaitable<void> {
          co_await handshake_server();
          co_await server_side();
        },
        [&]() -> net::awaitable<void> {
          co_await handshake_client();
          co_await client_side();
        });
  }

  net::io_context ioc_;
  std::shared_ptr<const leaf_certificate> leaf_;
  std::optional<stream> client_;
  std::optional<stream> server_;
};

TEST_F(SocketStreamTest, CarriesAMebibyteEachWayAndEndsWithCloseNotify) {
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 131 % 251);
  std::string server_got(big.size(), '\0'), client_got(big.size(), '\0');
  boost::system::error_code after_close;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        auto [rec, rn] = co_await net::async_read(*server_, net::buffer(server_got), tuple);
        EXPECT_FALSE(rec) << rec.message();
        auto [wec, wn] = co_await net::async_write(*server_, net::buffer(big), tuple);
        EXPECT_FALSE(wec) << wec.message();
        EXPECT_EQ(wn, big.size());
        server_->expires_after(5s);
        co_await server_->async_shutdown(tuple);
      },
      [&]() -> net::awaitable<void> {
        auto [wec, wn] = co_await net::async_write(*client_, net::buffer(big), tuple);
        EXPECT_FALSE(wec) << wec.message();
        auto [rec, rn] = co_await net::async_read(*client_, net::buffer(client_got), tuple);
        EXPECT_FALSE(rec) << rec.message();
        char more;
        auto [eec, en] = co_await client_->async_read_some(net::buffer(&more, 1), tuple);
        after_close = eec;
        co_await client_->async_shutdown(tuple);  // answers the server's close_notify
      });
  EXPECT_TRUE(server_got == big);
  EXPECT_TRUE(client_got == big);
  EXPECT_EQ(after_close, net::error::eof);  // close_notify: a clean end, not a truncation
}

TEST_F(SocketStreamTest, HandshakeTakesTheBytesReadBeforeIt) {
  std::size_t reported = 0;
  boost::system::error_code server_ec;
  std::string echoed(4, '\0');
  run(
      [&]() -> net::awaitable<void> {
        // As the proxy reads the ClientHello to see its SNI before the handshake starts.
        std::array<char, 64> first{};
        auto [rec, n] = co_await server_->socket().async_read_some(net::buffer(first), tuple);
        EXPECT_FALSE(rec);
        auto [ec, used] = co_await server_->async_handshake(net::ssl::stream_base::server,
                                                            net::buffer(first.data(), n), tuple);
        server_ec = ec;
        reported = used;
        EXPECT_EQ(used, n);
        std::array<char, 4> ping{};
        co_await net::async_read(*server_, net::buffer(ping), tuple);
        co_await net::async_write(*server_, net::buffer(ping), tuple);
      },
      [&]() -> net::awaitable<void> {
        co_await handshake_client();
        co_await net::async_write(*client_, net::buffer("ping", 4), tuple);
        co_await net::async_read(*client_, net::buffer(echoed), tuple);
      });
  EXPECT_FALSE(server_ec) << server_ec.message();
  EXPECT_GT(reported, 0u);
  EXPECT_EQ(echoed, "ping");
}

TEST_F(SocketStreamTest, ACloseWithoutCloseNotifyIsATruncation) {
  boost::system::error_code read_ec;
  after_handshakes([&]() -> net::awaitable<void> { co_await server_reads_one(read_ec); },
                   [&]() -> net::awaitable<void> {
                     client_->socket().close();
                     co_return;
                   });
  EXPECT_EQ(read_ec, net::ssl::error::stream_truncated) << read_ec.message();
}

TEST_F(SocketStreamTest, AReadPastItsDeadlineTimesOutAndClosesTheSocket) {
  boost::system::error_code read_ec;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        server_->expires_after(50ms);
        co_await server_reads_one(read_ec);
        EXPECT_FALSE(server_->socket().is_open());
      },
      [&]() -> net::awaitable<void> { co_return; });
  EXPECT_EQ(read_ec, boost::beast::error::timeout) << read_ec.message();
}

TEST_F(SocketStreamTest, ADeadlineMovedLaterOrClearedLetsTheReadFinish) {
  std::string got(2, '\0');
  boost::system::error_code first_ec, second_ec;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        server_->expires_after(30ms);  // arms the timer for 30 ms ...
        server_->expires_after(3s);    // ... which then finds the deadline later and waits again
        auto [ec1, n1] = co_await server_->async_read_some(net::buffer(&got[0], 1), tuple);
        first_ec = ec1;
        server_->expires_after(30ms);
        server_->expires_never();
        auto [ec2, n2] = co_await server_->async_read_some(net::buffer(&got[1], 1), tuple);
        second_ec = ec2;
      },
      [&]() -> net::awaitable<void> {
        co_await sleep_for(150ms);
        co_await net::async_write(*client_, net::buffer("a", 1), tuple);
        co_await sleep_for(150ms);
        co_await net::async_write(*client_, net::buffer("b", 1), tuple);
      });
  EXPECT_FALSE(first_ec) << first_ec.message();
  EXPECT_FALSE(second_ec) << second_ec.message();
  EXPECT_EQ(got, "ab");
}

TEST_F(SocketStreamTest, ADeadlineMovedEarlierEndsTheReadThen) {
  boost::system::error_code read_ec;
  auto waited = std::chrono::steady_clock::duration::max();
  after_handshakes(
      [&]() -> net::awaitable<void> {
        server_->expires_after(60s);
        server_->expires_after(50ms);
        const auto start = std::chrono::steady_clock::now();
        co_await server_reads_one(read_ec);
        waited = std::chrono::steady_clock::now() - start;
      },
      [&]() -> net::awaitable<void> { co_return; });
  EXPECT_EQ(read_ec, boost::beast::error::timeout) << read_ec.message();
  EXPECT_LT(waited, 30s);  // not the first deadline's minute (run() gives up after 20 s)
}

TEST_F(SocketStreamTest, AnOperationStartedAfterTheDeadlineTimesOutAtOnce) {
  boost::system::error_code write_ec;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        server_->expires_after(20ms);
        co_await sleep_for(200ms);
        auto [ec, n] = co_await net::async_write(*server_, net::buffer("late", 4), tuple);
        write_ec = ec;
      },
      [&]() -> net::awaitable<void> { co_return; });
  EXPECT_EQ(write_ec, boost::beast::error::timeout) << write_ec.message();
}

TEST_F(SocketStreamTest, CancellingTheTransportEndsAWaitingRead) {
  boost::system::error_code read_ec;
  after_handshakes([&]() -> net::awaitable<void> { co_await server_reads_one(read_ec); },
                   [&]() -> net::awaitable<void> {
                     co_await sleep_for(50ms);
                     server_->cancel();
                   });
  EXPECT_EQ(read_ec, net::error::operation_aborted) << read_ec.message();
}

TEST_F(SocketStreamTest, NothingBufferedSeesRecordsNotReadYet) {
  bool before = false, partly = true, two_records = true, after = false;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        before = server_->nothing_buffered();
        co_await sleep_for(100ms);  // both records are in by then
        std::array<char, 1> one{};
        co_await net::async_read(*server_, net::buffer(one), tuple);  // "x" of "xy"
        partly = server_->nothing_buffered();
        co_await net::async_read(*server_, net::buffer(one), tuple);  // "y"
        two_records = server_->nothing_buffered();                    // "z" waits
        co_await net::async_read(*server_, net::buffer(one), tuple);
        after = server_->nothing_buffered();
      },
      [&]() -> net::awaitable<void> {
        co_await net::async_write(*client_, net::buffer("xy", 2), tuple);  // one record
        co_await net::async_write(*client_, net::buffer("z", 1), tuple);   // and another
      });
  EXPECT_TRUE(before);
  EXPECT_FALSE(partly);
  EXPECT_FALSE(two_records);
  EXPECT_TRUE(after);
}

TEST_F(SocketStreamTest, AnIdleStreamGivesItsBuffersBackAndGoesOn) {
  bool with_unread = true, idle = false;
  std::string got(4, '\0');
  after_handshakes(
      [&]() -> net::awaitable<void> {
        co_await sleep_for(100ms);  // "ab" is in by then
        std::array<char, 1> one{};
        co_await net::async_read(*server_, net::buffer(one), tuple);  // "a"; "b" waits
        with_unread = server_->release_buffers();
        co_await net::async_read(*server_, net::buffer(one), tuple);  // "b"
        idle = server_->release_buffers();
        co_await net::async_read(*server_, net::buffer(got), tuple);  // after the release
        co_await net::async_write(*server_, net::buffer(got), tuple);
      },
      [&]() -> net::awaitable<void> {
        co_await net::async_write(*client_, net::buffer("ab", 2), tuple);
        co_await sleep_for(300ms);
        co_await net::async_write(*client_, net::buffer("more", 4), tuple);
        std::string echo(4, '\0');
        co_await net::async_read(*client_, net::buffer(echo), tuple);
        EXPECT_EQ(echo, "more");
      });
  EXPECT_FALSE(with_unread);  // "b" was still in OpenSSL's buffer
  EXPECT_TRUE(idle);
  EXPECT_EQ(got, "more");
}

TEST_F(SocketStreamTest, AFailedVerificationIsReportedInOpenSslsTerms) {
  boost::system::error_code client_ec;
  std::string reason;
  SSL_set1_host(client_->native_handle(), "other.test");  // the leaf does not name it
  run(
      [&]() -> net::awaitable<void> {
        co_await server_->async_handshake(net::ssl::stream_base::server, tuple);
      },
      [&]() -> net::awaitable<void> {
        auto [ec] = co_await client_->async_handshake(net::ssl::stream_base::client, tuple);
        client_ec = ec;
        reason = handshake_failure_reason(client_->native_handle(), ec);
        client_->close();
      });
  EXPECT_EQ(client_ec.category(), net::error::get_ssl_category());
  EXPECT_NE(reason.find("certificate verify failed"), std::string::npos) << reason;
}

TEST_F(SocketStreamTest, AStaleErrorOnTheThreadDoesNotFailTheNextCall) {
  std::string got(4, '\0');
  boost::system::error_code read_ec;
  after_handshakes(
      [&]() -> net::awaitable<void> {
        // Left behind by unrelated code on this thread: SSL_get_error would take it for the
        // read's own failure if the queue were not emptied first.
        ERR_raise(ERR_LIB_SSL, SSL_R_BAD_LENGTH);
        auto [ec, n] = co_await net::async_read(*server_, net::buffer(got), tuple);
        read_ec = ec;
      },
      [&]() -> net::awaitable<void> {
        co_await net::async_write(*client_, net::buffer("data", 4), tuple);
      });
  EXPECT_FALSE(read_ec) << read_ec.message();
  EXPECT_EQ(got, "data");
}

TEST_F(SocketStreamTest, AMovedStreamKeepsWorking) {
  std::string got(4, '\0');
  after_handshakes(
      [&]() -> net::awaitable<void> {
        co_await net::async_read(*server_, net::buffer(got), tuple);
      },
      [&]() -> net::awaitable<void> {
        // Beast's tcp_stream moves its socket to a new place when moved (the pool moves streams).
        stream moved(std::move(*client_));
        client_.reset();
        auto [ec, n] = co_await net::async_write(moved, net::buffer("move", 4), tuple);
        EXPECT_FALSE(ec) << ec.message();
      });
  EXPECT_EQ(got, "move");
}

}  // namespace
}  // namespace airlock::tls
