// The live events of GET /events: the hub's bounded queues and subscriber count, and the
// stream as a client reads it (head, data lines, the lost count, the heartbeat).
#include "telemetry/event_hub.hpp"
#include "telemetry/admin_events.hpp"
#include "telemetry/admin_server.hpp"
#include "telemetry/audit_event.hpp"
#include "telemetry/audit_log.hpp"

#include "admin_test_client.hpp"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <thread>

namespace airlock::telemetry {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

TEST(EventHub, NobodyListeningCostsNothing) {
  event_hub hub;
  EXPECT_FALSE(hub.has_subscribers());
  hub.publish("{\"a\":1}\n");  // dropped: no queue anywhere
  auto s = hub.subscribe();
  std::vector<std::string> got;
  EXPECT_EQ(s->take(got), 0u);
  EXPECT_TRUE(got.empty());
}

TEST(EventHub, EachSubscriberGetsEachEventWithoutItsNewline) {
  event_hub hub;
  auto a = hub.subscribe();
  auto b = hub.subscribe();
  hub.publish("{\"n\":1}\n");
  hub.publish("{\"n\":2}");
  std::vector<std::string> got;
  EXPECT_EQ(a->take(got), 0u);
  EXPECT_EQ(got, (std::vector<std::string>{"{\"n\":1}", "{\"n\":2}"}));
  got.clear();
  b->take(got);
  EXPECT_EQ(got.size(), 2u);
  got.clear();
  a->take(got);
  EXPECT_TRUE(got.empty());
}

TEST(EventHub, ASlowSubscriberLosesEventsAndIsToldHowMany) {
  event_hub hub(8, 3);
  auto s = hub.subscribe();
  for (int i = 0; i < 10; ++i)
    hub.publish("{}");
  std::vector<std::string> got;
  EXPECT_EQ(s->take(got), 7u);
  EXPECT_EQ(got.size(), 3u);
  got.clear();
  EXPECT_EQ(s->take(got), 0u);  // told once
}

TEST(EventHub, BoundedSubscribersAndRoomAgainWhenOneLeaves) {
  event_hub hub(2, 4);
  auto a = hub.subscribe();
  auto b = hub.subscribe();
  EXPECT_EQ(hub.subscribe(), nullptr);
  a.reset();
  EXPECT_NE(hub.subscribe(), nullptr);
}

TEST(EventHub, TheAuditLogPublishesEvenWhenOff) {
  event_hub hub;
  std::string error;
  auto log = audit_log::open("off", error);
  ASSERT_TRUE(log);
  log->set_live_events(&hub);
  audit_record r;
  r.agent = "coder";
  log->write(r);  // nobody listens yet
  auto s = hub.subscribe();
  r.host = "example.test";
  log->write(r);
  audit_event e;
  e.type = "operator";
  e.action = "stop";
  log->write(e);
  std::vector<std::string> got;
  s->take(got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(boost::json::parse(got[0]).at("host").as_string(), "example.test");
  EXPECT_EQ(boost::json::parse(got[1]).at("action").as_string(), "stop");
  log->set_live_events(nullptr);
}

class EventStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_handlers h;
    h.events = &hub;
    work.emplace(ioc.get_executor());
    server = std::make_unique<admin_server>(
        ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), std::move(h));
    server->start();
    runner = std::thread([this] { ioc.run(); });
  }
  void TearDown() override {
    server->stop();
    server.reset();
    work.reset();
    runner.join();
  }
  // Reads from `c` until `needle` arrived (or the read timed out): the text so far.
  static std::string read_until(tcp::socket& s, std::string& seen, std::string_view needle) {
    for (int i = 0; i < 200 && seen.find(needle) == std::string::npos; ++i) {
      char buf[4096];
      boost::system::error_code ec;
      const std::size_t n = s.read_some(net::buffer(buf), ec);
      if (ec) break;
      seen.append(buf, n);
    }
    return seen;
  }
  tcp::socket connect() {
    tcp::socket s(client_io);
    s.connect(server->local_endpoint());
    timeval tv{10, 0};
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return s;
  }

  event_hub hub{2, 4};
  net::io_context ioc;
  net::io_context client_io;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::unique_ptr<admin_server> server;
  std::thread runner;
};

TEST_F(EventStreamTest, DataLinesLostCountAndSubscriberBound) {
  auto s = connect();
  net::write(s, net::buffer(std::string_view("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")));
  std::string seen;
  read_until(s, seen, "\r\n\r\n");
  EXPECT_NE(seen.find("HTTP/1.1 200 OK\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("Content-Type: text/event-stream"), std::string::npos) << seen;
  EXPECT_NE(seen.find("Cache-Control: no-store"), std::string::npos) << seen;
  // Wait until the stream's subscription exists, then publish.
  for (int i = 0; i < 500 && !hub.has_subscribers(); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(hub.has_subscribers());
  hub.publish("{\"decision\":\"allow\"}\n");
  read_until(s, seen, "data: {\"decision\":\"allow\"}\n\n");
  EXPECT_NE(seen.find("data: {\"decision\":\"allow\"}\n\n"), std::string::npos) << seen;
  // More than the queue holds between two polls: the rest is counted as lost.
  for (int i = 0; i < 50; ++i)
    hub.publish("{\"n\":0}");
  read_until(s, seen, "event: lost\ndata: {\"lost\":");
  EXPECT_NE(seen.find("event: lost\ndata: {\"lost\":"), std::string::npos) << seen;

  // Two subscribers at most: a third stream is refused with 503; a second is accepted.
  auto s2 = connect();
  net::write(s2, net::buffer(std::string_view("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")));
  std::string seen2;
  read_until(s2, seen2, "\r\n\r\n");
  EXPECT_NE(seen2.find("200 OK"), std::string::npos);
  auto s3 = connect();
  net::write(s3, net::buffer(std::string_view("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")));
  std::string seen3;
  read_until(s3, seen3, "subscribers");
  EXPECT_NE(seen3.find("503"), std::string::npos) << seen3;
}

TEST_F(EventStreamTest, PageElementsOnAnotherSiteTakeNoSlot) {
  // <img src=http://127.0.0.1:PORT/events> on a web page, more of them than there are slots:
  // each is refused before it subscribes (admin_gate.hpp), so the operator's view still opens.
  for (int i = 0; i < 4; ++i) {
    client c(server->local_endpoint());
    auto res = c.request("GET", "/events?" + std::to_string(i),
                         "Sec-Fetch-Site: cross-site\r\nSec-Fetch-Mode: no-cors\r\n"
                         "Sec-Fetch-Dest: image\r\n");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result(), boost::beast::http::status::forbidden);
    EXPECT_EQ(res->body(), "cross-site request refused (Sec-Fetch-Site: cross-site)\n");
  }
  EXPECT_FALSE(hub.has_subscribers());
  auto s = connect();
  net::write(s, net::buffer(std::string_view(
                    "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nSec-Fetch-Site: same-origin\r\n"
                    "Sec-Fetch-Mode: cors\r\nSec-Fetch-Dest: empty\r\n\r\n")));
  std::string seen;
  read_until(s, seen, "\r\n\r\n");
  EXPECT_TRUE(seen.starts_with("HTTP/1.1 200 OK\r\n")) << seen;
}

TEST_F(EventStreamTest, PostIsNotAllowed) {
  client c(server->local_endpoint());
  auto res = c.request("POST", "/events", "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), boost::beast::http::status::method_not_allowed);
}

TEST(EventStream, HeartbeatWhenIdleAndStopEndsIt) {
  // serve_events itself, with short timings: an idle stream sends a comment line now and then
  // (proxies and load balancers close connections that stay silent), and ends when told to.
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket reader(ioc);
  reader.connect(acceptor.local_endpoint());
  boost::beast::tcp_stream writer(acceptor.accept());
  event_hub hub;
  std::atomic<bool> stop{false};
  event_stream_timing timing;
  timing.poll = 20ms;
  timing.heartbeat = 100ms;
  net::co_spawn(ioc,
                serve_events(
                    writer, hub.subscribe(), [&] { return stop.load(); }, timing),
                net::detached);
  std::thread runner([&] { ioc.run(); });
  timeval tv{10, 0};
  ::setsockopt(reader.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string seen;
  for (int i = 0; i < 200 && seen.find(": heartbeat\n\n") == std::string::npos; ++i) {
    char buf[1024];
    boost::system::error_code ec;
    const std::size_t n = reader.read_some(net::buffer(buf), ec);
    if (ec) break;
    seen.append(buf, n);
  }
  EXPECT_NE(seen.find("retry: 2000\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find(": heartbeat\n\n"), std::string::npos) << seen;
  stop = true;
  runner.join();  // serve_events returned: nothing else keeps the context busy
}

}  // namespace
}  // namespace airlock::telemetry
