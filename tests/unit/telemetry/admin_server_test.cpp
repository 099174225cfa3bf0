#include "telemetry/admin_server.hpp"

#include "admin_test_client.hpp"

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::telemetry {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

class AdminServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start_server(default_handlers()); }

  admin_handlers default_handlers() {
    admin_handlers h;
    h.metrics_text = [this] {
      ++metrics_calls;
      return std::string("# TYPE airlock_up gauge\nairlock_up 1\n");
    };
    h.ready = [this](std::string&) { return ready.load(); };
    h.policy_json = [] { return std::string(R"({"version":"v1","rules":["pypi"]})"); };
    h.reload = [this](const admin_actor& by, std::string& message) {
      last_by = by.by;
      if (reload_throws) throw std::runtime_error("boom");
      message = reload_ok ? "policy v2 loaded" : "policy.yaml:3:5: unknown key 'hots'";
      return reload_ok.load();
    };
    return h;
  }

  void start_server(admin_handlers h) {
    ioc.restart();
    work.emplace(ioc.get_executor());
    server = std::make_unique<admin_server>(
        ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), std::move(h));
    endpoint = server->local_endpoint();
    server->start();
    runner = std::thread([this] { ioc.run(); });
  }

  void TearDown() override {
    if (!runner.joinable()) return;
    if (server) server->stop();
    server.reset();
    work.reset();
    // Every coroutine ends once its socket is closed; run() then returns by itself.
    runner.join();
  }

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::unique_ptr<admin_server> server;
  tcp::endpoint endpoint;
  std::thread runner;
  std::atomic<bool> ready{true};
  std::atomic<bool> reload_ok{true};
  std::atomic<bool> reload_throws{false};
  std::atomic<int> metrics_calls{0};
  std::string last_by;  // written by the reload handler (the io thread), read after the answer
};

TEST_F(AdminServerTest, BindsAnEphemeralLoopbackPort) {
  EXPECT_NE(endpoint.port(), 0);
  EXPECT_EQ(endpoint.address(), net::ip::make_address("127.0.0.1"));
}

TEST_F(AdminServerTest, Healthz) {
  client c(endpoint);
  auto res = c.request("GET", "/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ(res->body(), "ok");
  EXPECT_EQ((*res)[http::field::cache_control], "no-store");
}

TEST_F(AdminServerTest, ReadyzFollowsTheHandler) {
  client c(endpoint);
  auto res = c.request("GET", "/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ(res->body(), "ready");
  ready = false;
  res = c.request("GET", "/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::service_unavailable);
  EXPECT_EQ(res->body(), "not ready");
}

TEST_F(AdminServerTest, MetricsWithPrometheusContentType) {
  client c(endpoint);
  auto res = c.request("GET", "/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ((*res)[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(res->body(), "# TYPE airlock_up gauge\nairlock_up 1\n");
  // A query string (some scrapers add one) does not change the resource.
  res = c.request("GET", "/metrics?name[]=airlock_up");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
}

TEST_F(AdminServerTest, PolicyIsJson) {
  client c(endpoint);
  auto res = c.request("GET", "/policy");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ((*res)[http::field::content_type], "application/json");
  EXPECT_EQ(boost::json::parse(res->body()).at("version").as_string(), "v1");
}

TEST_F(AdminServerTest, ReloadSuccessAndFailure) {
  client c(endpoint);
  auto res = c.request("POST", "/reload", "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ(res->body(), "policy v2 loaded");
  reload_ok = false;
  res = c.request("POST", "/reload", "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::unprocessable_entity);
  EXPECT_EQ(res->body(), "policy.yaml:3:5: unknown key 'hots'");
}

TEST_F(AdminServerTest, HandlerExceptionIs500AndServerKeepsWorking) {
  reload_throws = true;
  client c(endpoint);
  auto res = c.request("POST", "/reload", "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::internal_server_error);
  EXPECT_EQ(res->body().find("boom"), std::string::npos) << "no internals in the answer";
  res = c.request("GET", "/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
}

TEST_F(AdminServerTest, WrongMethodsAre405WithAllow) {
  client c(endpoint);
  auto res = c.request("GET", "/reload");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::method_not_allowed);
  EXPECT_EQ((*res)[http::field::allow], "POST");
  for (auto target : {"/metrics", "/healthz", "/readyz", "/policy"}) {
    res = c.request("POST", target, "Content-Length: 0\r\n");
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->result(), http::status::method_not_allowed) << target;
    EXPECT_EQ((*res)[http::field::allow], "GET, HEAD");
  }
  res = c.request("DELETE", "/policy");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::method_not_allowed);
}

TEST_F(AdminServerTest, UnknownPathsAre404) {
  client c(endpoint);
  for (auto target :
       {"/", "/metrics/", "/Metrics", "//metrics", "/reload/x", "/healthz.json", "/../metrics"}) {
    auto res = c.request("GET", target);
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->result(), http::status::not_found) << target;
    EXPECT_FALSE(res->body().empty());
  }
  EXPECT_EQ(metrics_calls.load(), 0);
}

TEST_F(AdminServerTest, ProxyRequestsAre404) {
  client c(endpoint);
  auto res = c.request("GET", "http://127.0.0.1/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
  res = c.request("POST", "http://example.com/reload", "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
  res = c.request("OPTIONS", "*");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
  EXPECT_EQ(metrics_calls.load(), 0);
  // CONNECT, with an authority or with a path: never a tunnel, never an admin resource.
  client c2(endpoint);
  c2.send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  res = c2.read(/*head=*/true);  // a 404 to CONNECT: parse the head
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
  client c3(endpoint);
  c3.send("CONNECT /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  res = c3.read(true);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::not_found);
  EXPECT_EQ(metrics_calls.load(), 0);
}

TEST_F(AdminServerTest, HeadHasLengthButNoBody) {
  client c(endpoint);
  auto res = c.request("HEAD", "/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ((*res)[http::field::content_length], "2");
  EXPECT_TRUE(res->body().empty());
  // The connection is still in sync: the next response parses.
  res = c.request("GET", "/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "ok");
}

TEST_F(AdminServerTest, KeepAliveAndPipelining) {
  client c(endpoint);
  for (int i = 0; i < 5; ++i) {
    auto res = c.request("GET", "/healthz");
    ASSERT_TRUE(res);
    EXPECT_TRUE(res->keep_alive());
  }
  c.send(
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /readyz HTTP/1.1\r\nHost: "
      "127.0.0.1\r\n\r\n"
      "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  auto a = c.read();
  auto b = c.read();
  auto d = c.read();
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(a->body(), "ok");
  EXPECT_EQ(b->body(), "ready");
  EXPECT_EQ(d->result(), http::status::not_found);
  EXPECT_FALSE(d->keep_alive());
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(AdminServerTest, Http10ClosesAfterResponse) {
  client c(endpoint);
  c.send("GET /healthz HTTP/1.0\r\n\r\n");
  auto res = c.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body(), "ok");
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(AdminServerTest, OversizedHeadIs431AndClosed) {
  client c(endpoint);
  std::string big(9000, 'a');
  c.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big + "\r\n\r\n");
  auto res = c.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::request_header_fields_too_large);
  EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(AdminServerTest, RefusalSurvivesAClientStillSending) {
  // 256 KiB of head fields, all sent before the client reads: the server must not reset the
  // connection under the 431 it already sent.
  client c(endpoint);
  std::string head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  while (head.size() < 256 * 1024)
    head += "X-Filler: " + std::string(1000, 'f') + "\r\n";
  c.send(head + "\r\n");
  auto res = c.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::request_header_fields_too_large);
}

TEST_F(AdminServerTest, OversizedBodyIs413) {
  client c(endpoint);
  c.send("POST /reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n");
  auto res = c.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::payload_too_large);
}

TEST_F(AdminServerTest, GarbageIs400AndClosed) {
  client c(endpoint);
  c.send("\x16\x03\x01\x02\x00 not http at all\r\n\r\n");
  auto res = c.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::bad_request);
  EXPECT_TRUE(c.closed_by_peer());
  // Request smuggling shapes are refused rather than guessed at.
  client c2(endpoint);
  c2.send(
      "POST /reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: "
      "2\r\n\r\nab");
  res = c2.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::bad_request);
}

TEST_F(AdminServerTest, ConnectionCapAnswers503) {
  std::vector<std::unique_ptr<client>> idle;
  for (int i = 0; i < 64; ++i)
    idle.push_back(std::make_unique<client>(endpoint));
  // Connections are accepted in order, so by the time the 65th is accepted the first 64 are
  // registered.
  client extra(endpoint);
  auto res = extra.read();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::service_unavailable);
  EXPECT_TRUE(extra.closed_by_peer());
  // The held connections work.
  auto ok = idle[10]->request("GET", "/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->result(), http::status::ok);
  // Freeing a slot lets a new client in (the server notices the close asynchronously).
  idle[0].reset();
  bool admitted = false;
  for (int attempt = 0; attempt < 200 && !admitted; ++attempt) {
    client next(endpoint);
    next.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    auto r = next.read();
    admitted = r && r->result() == http::status::ok;
    if (!admitted) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(admitted);
}

TEST_F(AdminServerTest, StopClosesListenerAndOpenConnections) {
  client c(endpoint);
  ASSERT_TRUE(c.request("GET", "/healthz"));
  server->stop();
  EXPECT_TRUE(c.closed_by_peer());
  // The port no longer accepts (the acceptor is closed once the posted close has run).
  bool refused = false;
  for (int attempt = 0; attempt < 200 && !refused; ++attempt) {
    try {
      client late(endpoint);
      late.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      refused = !late.read();
    } catch (const boost::system::system_error&) {
      refused = true;
    }
    if (!refused) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(refused);
  server->stop();   // idempotent
  server->start();  // no-op after stop
}

TEST_F(AdminServerTest, DestructorWithPendingConnectionsIsSafe) {
  std::vector<std::unique_ptr<client>> clients;
  for (int i = 0; i < 5; ++i)
    clients.push_back(std::make_unique<client>(endpoint));
  ASSERT_TRUE(clients[0]->request("GET", "/healthz"));
  clients[1]->send("GET /hea");  // half a request in flight
  server.reset();                // coroutines still pending on the io_context thread
  for (auto& c : clients)
    EXPECT_TRUE(c->closed_by_peer());
}

TEST_F(AdminServerTest, StopFromInsideAHandlerDoesNotDeadlock) {
  TearDown();
  admin_handlers h;
  h.reload = [this](const admin_actor& by, std::string& message) {
    last_by = by.by;
    server->stop();
    message = "stopping";
    return true;
  };
  start_server(std::move(h));
  client c(endpoint);
  c.send("POST /reload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n");
  // Either the answer or the close arrives; the point is that neither side hangs.
  auto res = c.read();
  if (res) {
    EXPECT_EQ(res->result(), http::status::ok);
  }
}

TEST_F(AdminServerTest, HandlersAreNotCalledAfterStop) {
  std::atomic<int> calls{0};
  TearDown();
  admin_handlers h;
  h.metrics_text = [&calls] {
    ++calls;
    return std::string("x");
  };
  start_server(std::move(h));
  client c(endpoint);
  ASSERT_TRUE(c.request("GET", "/metrics"));
  EXPECT_EQ(calls.load(), 1);
  server->stop();
  // A request already on the wire when stop() ran gets no handler call.
  try {
    c.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    auto res = c.read();
    if (res) {
      EXPECT_EQ(res->result(), http::status::service_unavailable);
    }
  } catch (const boost::system::system_error&) {
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(AdminServerTest, UnconfiguredHandlersAre501) {
  TearDown();
  start_server(admin_handlers{});
  client c(endpoint);
  for (auto target : {"/metrics", "/readyz", "/policy"}) {
    auto res = c.request("GET", target);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result(), http::status::not_implemented) << target;
  }
  auto res = c.request("GET", "/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
}

TEST(AdminServer, BindFailureThrows) {
  net::io_context ioc;
  admin_server first(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), {});
  // reuse_address does not allow two listeners on one port.
  EXPECT_THROW(admin_server(ioc, first.local_endpoint(), {}), boost::system::system_error);
}

TEST(AdminServer, DestroyWithoutRunningTheContextReleasesThePort) {
  net::io_context ioc;
  tcp::endpoint ep;
  {
    admin_server s(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), {});
    ep = s.local_endpoint();
  }
  admin_server again(ioc, ep, {});  // binds the same port again
  EXPECT_EQ(again.local_endpoint().port(), ep.port());
}

}  // namespace
}  // namespace airlock::telemetry
