#include "proxy/websocket_relay.hpp"

#include "test_util.hpp"
#include "websocket/message_reader.hpp"
#include "websocket_test_frames.hpp"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>

#include <optional>
#include <string>

// The relay's sockets: agent <-> [client | relay | upstream] <-> origin on 127.0.0.1. Messages
// pass re-framed both ways; a refused one reaches neither side, both get a close, and the relay
// ends once the peers close (not at the idle timeout).
namespace airlock::proxy {
namespace {

using namespace std::chrono_literals;
using test::tcp;
namespace asio = boost::asio;
namespace ws = websocket;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class refuse_word final : public filters::filter {
 public:
  filters::verdict on_message(filters::exchange&, const filters::message& m) override {
    if (m.payload.find("forbidden") != std::string_view::npos)
      return filters::verdict::refuse(core::errc::placeholder_refused, "forbidden");
    return filters::verdict::next();
  }
};
class refuse_word_factory final : public filters::filter_factory {
 public:
  filters::filter* create(const filters::exchange&, std::pmr::memory_resource& a) const override {
    return make<refuse_word>(a);
  }
};

// Reads frames until `count` were read or the socket ended.
asio::awaitable<void> read_frames(tcp::socket& s, ws::sender from, std::size_t count,
                                  std::vector<ws::event>& out) {
  ws::message_reader reader(from, 1 << 20, false);
  char buf[4096];
  while (out.size() < count) {
    auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), use_tuple);
    reader.feed(std::string_view(buf, n));
    for (auto e = reader.next(); e.what != ws::event::kind::need_more; e = reader.next()) {
      out.push_back(e);
      if (e.what == ws::event::kind::error) co_return;
    }
    if (ec) co_return;
  }
}

// (A function, not a lambda: a coroutine lambda's captures die with the temporary.)
asio::awaitable<void> write_all(tcp::socket& s, std::string bytes) {
  auto [ec, n] = co_await asio::async_write(s, asio::buffer(bytes), use_tuple);
  EXPECT_FALSE(ec) << ec.message();
}

class WebsocketRelayTest : public ::testing::Test {
 protected:
  WebsocketRelayTest() {
    auto [a, c] = test::loopback_pair(io_);
    auto [u, o] = test::loopback_pair(io_);
    agent_.emplace(std::move(a));
    client_.emplace(std::move(c));
    upstream_.emplace(std::move(u));
    origin_.emplace(std::move(o));
    factories_.push_back(std::make_unique<refuse_word_factory>());
    chain_.emplace(factories_, ex_);
    conv_.emplace(*chain_, 1 << 20, false);
  }
  ~WebsocketRelayTest() override {
    for (auto* s : {&agent_, &client_, &upstream_, &origin_}) {
      boost::system::error_code ignored;
      (*s)->close(ignored);
    }
    io_.restart();
    io_.run_for(1s);
  }
  void start_relay(std::chrono::milliseconds idle) {
    asio::co_spawn(io_,
                   relay_websocket(*client_, client_buffer_, *upstream_, up_buffer_, *conv_, idle,
                                   {}, {}, totals_),
                   [this](std::exception_ptr e) {
                     EXPECT_FALSE(e);
                     ended_ = true;
                   });
  }
  template <class Awaitable>
  void spawn(Awaitable a, bool& done) {
    asio::co_spawn(io_, std::move(a), [&done](std::exception_ptr e) {
      EXPECT_FALSE(e);
      done = true;
    });
  }
  void write(tcp::socket& s, std::string bytes) {
    bool done = false;
    spawn(write_all(s, std::move(bytes)), done);
    ASSERT_TRUE(test::run_until(
        io_, [&] { return done; }, 5s));
  }

  asio::io_context io_;
  std::optional<tcp::socket> agent_, client_, upstream_, origin_;
  boost::beast::flat_buffer client_buffer_, up_buffer_;
  std::vector<std::unique_ptr<filters::filter_factory>> factories_;
  filters::exchange ex_;
  std::optional<filters::chain> chain_;
  std::optional<websocket_conversation> conv_;
  tunnel_totals totals_;
  bool ended_ = false;
};

TEST_F(WebsocketRelayTest, MessagesPassBothWaysAndARefusedOneReachesNeitherSide) {
  // A frame already buffered past the heads is the first one read.
  const auto first = ws::encode_frame(ws::opcode::text, "early", true);
  boost::asio::buffer_copy(client_buffer_.prepare(first.size()), asio::buffer(first));
  client_buffer_.commit(first.size());
  start_relay(30s);
  std::vector<ws::event> at_origin, at_agent;
  bool origin_done = false, agent_done = false;
  spawn(read_frames(*origin_, ws::sender::client, 3, at_origin), origin_done);
  write(*agent_, ws::encode_frame(ws::opcode::text, "hello", true));
  write(*origin_, ws::encode_frame(ws::opcode::text, "from the origin", false));
  spawn(read_frames(*agent_, ws::sender::server, 2, at_agent), agent_done);
  write(*agent_, ws::encode_frame(ws::opcode::text, "a forbidden word", true));
  ASSERT_TRUE(test::run_until(
      io_, [&] { return origin_done && agent_done; }, 10s));
  ASSERT_EQ(at_origin.size(), 3u);
  EXPECT_EQ(at_origin[0].payload, "early");
  EXPECT_EQ(at_origin[1].payload, "hello");
  EXPECT_EQ(at_origin[2].op, ws::opcode::close);
  EXPECT_EQ(at_origin[2].code, 1008);
  ASSERT_EQ(at_agent.size(), 2u);
  EXPECT_EQ(at_agent[0].payload, "from the origin");
  EXPECT_EQ(at_agent[1].op, ws::opcode::close);
  EXPECT_EQ(at_agent[1].code, 1008);
  // The peers close in turn: the relay ends then, long before the idle timeout.
  agent_->close();
  origin_->close();
  ASSERT_TRUE(test::run_until(
      io_, [&] { return ended_; }, 10s));
  EXPECT_EQ(ex_.record.websocket->client_messages, 2u);
  EXPECT_EQ(ex_.record.websocket->origin_messages, 1u);
  EXPECT_EQ(ex_.record.reason, core::errc::placeholder_refused);
}

// The agent closes; the origin answers with its Close and then a text frame, and keeps its
// TCP connection open. The agent gets the Close and then the end of the TCP connection (the
// proxy is its server, which closes first: RFC 6455 section 7.1.1), never the text frame.
TEST_F(WebsocketRelayTest, DataAfterTheOriginsCloseNeverReachesTheAgent) {
  start_relay(30s);
  std::vector<ws::event> at_origin, at_agent;
  bool origin_done = false, agent_done = false;
  spawn(read_frames(*origin_, ws::sender::client, 1, at_origin), origin_done);
  write(*agent_, ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true));
  ASSERT_TRUE(test::run_until(
      io_, [&] { return origin_done; }, 10s));
  ASSERT_EQ(at_origin.size(), 1u);
  EXPECT_EQ(at_origin[0].code, 1000);
  // Two frames asked for: the read ends at the second frame or at the end of the connection.
  spawn(read_frames(*agent_, ws::sender::server, 2, at_agent), agent_done);
  write(*origin_, ws::encode_frame(ws::opcode::close, ws::close_payload(4000, "origin"), false) +
                      ws::encode_frame(ws::opcode::text, "DATA-AFTER-CLOSE", false));
  ASSERT_TRUE(test::run_until(
      io_, [&] { return agent_done; }, 10s));
  ASSERT_EQ(at_agent.size(), 1u);
  EXPECT_EQ(at_agent[0].op, ws::opcode::close);
  EXPECT_EQ(at_agent[0].code, 4000);
  agent_->close();
  origin_->close();
  ASSERT_TRUE(test::run_until(
      io_, [&] { return ended_; }, 10s));
  const auto& w = *ex_.record.websocket;
  EXPECT_EQ(w.origin_messages, 0u);
  EXPECT_EQ(w.closed_by, "client");
  EXPECT_EQ(w.close_code, 1000);
  EXPECT_EQ(w.close_reply_code, 4000);
}

// The agent sends a text frame after its Close: the origin never gets it.
TEST_F(WebsocketRelayTest, DataAfterTheAgentsCloseNeverReachesTheOrigin) {
  start_relay(30s);
  std::vector<ws::event> at_origin, at_agent;
  bool origin_done = false, agent_done = false;
  // Two frames asked for: the read ends at the second frame or when the relay closes.
  spawn(read_frames(*origin_, ws::sender::client, 2, at_origin), origin_done);
  spawn(read_frames(*agent_, ws::sender::server, 2, at_agent), agent_done);
  write(*agent_, ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true) +
                     ws::encode_frame(ws::opcode::text, "DATA-AFTER-CLOSE", true));
  // The origin answers once it has the Close, and closes its side as a server does.
  ASSERT_TRUE(test::run_until(
      io_, [&] { return !at_origin.empty() || origin_done; }, 10s));
  write(*origin_, ws::encode_frame(ws::opcode::close, ws::close_payload(1000, ""), false));
  origin_->shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(test::run_until(
      io_, [&] { return agent_done; }, 10s));
  ASSERT_EQ(at_agent.size(), 1u);
  EXPECT_EQ(at_agent[0].code, 1000);
  agent_->close();
  ASSERT_TRUE(test::run_until(
      io_, [&] { return ended_ && origin_done; }, 10s));
  ASSERT_EQ(at_origin.size(), 1u);
  EXPECT_EQ(at_origin[0].op, ws::opcode::close);
  EXPECT_EQ(ex_.record.websocket->client_messages, 0u);
  EXPECT_EQ(ex_.record.websocket->closed_by, "client");
}

// One write of compressed messages that each inflate to the limit: the relay answers what it
// read a round at a time (websocket_conversation::output_bound), each round made from frames
// already read, and every message reaches the origin, whole and in order.
TEST_F(WebsocketRelayTest, CompressedMessagesReadAtOnceAllPassInOrder) {
  constexpr std::size_t max_message = 256 * 1024;
  constexpr std::size_t count = 40;
  conv_.emplace(*chain_, max_message, true);
  start_relay(30s);
  test::deflater d;
  std::string bytes;
  for (std::size_t i = 0; i < count; ++i)
    bytes += test::compressed_client_frame(
        d.z, std::string(max_message, static_cast<char>('a' + i % 26)));
  std::vector<ws::event> at_origin;
  bool origin_done = false;
  spawn(read_frames(*origin_, ws::sender::client, count, at_origin), origin_done);
  write(*agent_, bytes);
  ASSERT_TRUE(test::run_until(
      io_, [&] { return origin_done; }, 20s));
  ASSERT_EQ(at_origin.size(), count);
  for (std::size_t i = 0; i < count; ++i)
    EXPECT_EQ(at_origin[i].payload, std::string(max_message, static_cast<char>('a' + i % 26)))
        << "message " << i;
  EXPECT_EQ(ex_.record.websocket->client_messages, count);
}

TEST_F(WebsocketRelayTest, PeersThatNeverCloseAreLetGoAfterTheLinger) {
  start_relay(30s);
  std::vector<ws::event> at_agent;
  bool agent_done = false;
  spawn(read_frames(*agent_, ws::sender::server, 1, at_agent), agent_done);
  write(*agent_, ws::encode_frame(ws::opcode::text, "forbidden", true));
  ASSERT_TRUE(test::run_until(
      io_, [&] { return agent_done; }, 10s));
  ASSERT_EQ(at_agent.size(), 1u);
  EXPECT_EQ(at_agent[0].code, 1008);
  // Neither peer closes; the relay lets them go after its linger (5 s), not the idle 30 s.
  ASSERT_TRUE(test::run_until(
      io_, [&] { return ended_; }, 20s));
}

}  // namespace
}  // namespace airlock::proxy
