#include "proxy/forward.hpp"

#include "filters/chain.hpp"
#include "filters/pipeline.hpp"
#include "filters/rate_limit/registry.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "proxy/h1_request.hpp"
#include "proxy/pending_wait.hpp"
#include "proxy/worker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

// The HTTP/1.1 codec, the filter chain and forwarding driven over Beast's in-memory
// test::stream: no sockets, no DNS. `client` is the agent's connection (its input is what the
// agent sent; what the proxy writes appears at `agent`), `upstream` the origin's (its input is
// the origin's answer; what the proxy sends appears at `origin`). The steps are the session's:
// read the head, fill the exchange, run the chain, hold a checked body, forward.
namespace airlock::proxy {
namespace {
namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using beast::test::stream;

constexpr const char* kToken = "sk-REALVALUE-0123456789abcdef0123456789";

std::shared_ptr<const policy::snapshot> load_policy() {
  ::setenv("AIRLOCK_TEST_FWD_KEY", kToken, 1);
  auto r = policy::load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
limits: {header_bytes: 8KiB}
secrets:
  key: {env: AIRLOCK_TEST_FWD_KEY, hosts: [api.example.com]}
agents:
  default: {rules: [api, plain, watched]}
rules:
  - name: api
    hosts: [api.example.com]
    ports: [80]
    inject: {headers: {Authorization: 'Bearer ${secrets.key}'}}
  - name: plain
    hosts: [plain.example.com]
    ports: [80]
    paths: ['^/ok']
  - name: watched
    hosts: [watched.example.com]
    ports: [80]
    mode: report
    paths: ['^/ok']
    body: {json: {n: {type: integer}}}
)",
                               "forward.yaml");
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  return r.policy;
}

struct outcome {
  bool done = false;
  bool answered_by_proxy = false;  // refused (or failed) before forwarding
  forward_result result;
  filters::exchange_record record;
};

class exchange_test : public ::testing::Test {
 protected:
  exchange_test() : worker_(shared_) {
    filters::lasting_state state{&rates_};
    pipeline_ = filters::pipeline::build(load_policy(), state).built;
  }

  // One exchange, the session's steps in order, over the given streams.
  asio::awaitable<void> serve(stream& client, stream& upstream, outcome& out) {
    const auto& snap = pipeline_->snapshot();
    const auto& limits = snap.limits();
    beast::flat_buffer client_buffer, up_buffer;
    filters::exchange ex;
    ex.snapshot = &snap;
    h1::request_parser req_p;
    auto head = co_await h1::read_head(client, client_buffer, req_p, limits);
    if (head.what != h1::head_outcome::kind::complete) {
      if (head.what == h1::head_outcome::kind::refused) {
        ex.record.refuse(head.reason, head.detail);
        co_await send_answer(client, ex.record, 11, false);
      }
      out.record = ex.record;
      out.done = true;
      co_return;
    }
    auto& req = req_p.get();
    ex.request = &req;
    auto finish = [&](bool answered) {
      out.answered_by_proxy = answered;
      out.record = ex.record;
      out.done = true;
    };
    if (auto bad = h1::parse_request(req_p, nullptr, limits, ex)) {
      ex.record.refuse(bad->reason, bad->detail);
      co_await send_answer(client, ex.record, req.version(), false);
      co_return finish(true);
    }
    ex.agent = snap.find_agent("default");
    ex.record.agent = "default";
    filters::chain chain(pipeline_->factories(), ex);
    auto v = chain.request_head();
    while (v.waits())
      v = chain.resume(co_await await_pending(*v.waiting, limits.idle_timeout));
    if (!v.passes()) {
      co_await send_answer(client, ex.record, req.version(), false);
      co_return finish(true);
    }
    req_p.body_limit(ex.body_limit);
    std::optional<std::string> held;
    if (chain.request_body_use() == filters::body_use::whole) {
      held.emplace();
      auto ec =
          co_await h1::read_whole_body(client, client_buffer, req_p, *held, limits.idle_timeout);
      if (ec || !chain.request_body(*held, true).passes()) {
        if (ec) ex.record.refuse(core::errc::bad_request, ec.message());
        co_await send_answer(client, ex.record, req.version(), false);
        co_return finish(true);
      }
      req.content_length(held->size());
    }
    if (!chain.forward().passes()) {
      co_await send_answer(client, ex.record, req.version(), false);
      co_return finish(true);
    }
    forward_params fp;
    fp.version = req.version();
    fp.client_keep_alive = req.keep_alive();
    fp.expect_continue = h1::expects_continue(req) && !held;
    fp.head = req.method() == http::verb::head;
    fp.body = held ? &*held : nullptr;
    fp.upgrade = h1::rewrite_for_upstream(req, ex);
    out.result = co_await forward(worker_, client, client_buffer, upstream, up_buffer, req_p, chain,
                                  limits, fp);
    chain.end();
    finish(false);
  }

  outcome run(stream& client, stream& upstream) {
    outcome out;
    asio::co_spawn(ioc_, serve(client, upstream, out), asio::detached);
    ioc_.run_for(std::chrono::seconds(10));
    ioc_.restart();
    EXPECT_TRUE(out.done) << "the exchange did not finish";
    return out;
  }

  asio::io_context ioc_;
  shared_state shared_;
  worker worker_;
  filters::rate_limit::registry rates_;
  std::shared_ptr<const filters::pipeline> pipeline_;
};

TEST_F(exchange_test, AnAllowedRequestGoesOutRewrittenWithItsCredentialAndComesBack) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append(
      "GET http://api.example.com/v1?q=1 HTTP/1.1\r\nHost: api.example.com\r\n"
      "Proxy-Connection: keep-alive\r\nAuthorization: Bearer agent-own\r\n\r\n");
  upstream.append(
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
      "Content-Length: 5\r\n\r\nhello");
  auto out = run(client, upstream);
  ASSERT_FALSE(out.answered_by_proxy) << out.record.detail;
  const std::string sent(origin.str());
  EXPECT_EQ(sent.rfind("GET /v1?q=1 HTTP/1.1\r\n", 0), 0u) << sent;
  EXPECT_NE(sent.find(std::string("Bearer ") + kToken), std::string::npos);
  EXPECT_EQ(sent.find("agent-own"), std::string::npos);
  EXPECT_EQ(sent.find("Proxy-Connection"), std::string::npos);
  const std::string got(agent.str());
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_EQ(got.substr(got.size() - 5), "hello");
  EXPECT_EQ(out.record.decision(), "allow");
  EXPECT_TRUE(out.result.client_continues);
  EXPECT_TRUE(out.result.upstream_reusable);
}

TEST_F(exchange_test, ARefusalIsAnsweredAndNothingReachesTheOrigin) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append("GET http://plain.example.com/secret HTTP/1.1\r\nHost: plain.example.com\r\n\r\n");
  auto out = run(client, upstream);
  EXPECT_TRUE(out.answered_by_proxy);
  EXPECT_EQ(out.record.reason, core::errc::path_denied);
  const std::string got(agent.str());
  EXPECT_EQ(got.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Proxy-Status: airlock; error=http_request_denied"), std::string::npos);
  EXPECT_TRUE(origin.str().empty());
}

TEST_F(exchange_test, AHeadOverTheLimitIsRefusedEvenWhenItArrivesInOneRead) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  // A start line and fields each under the limit, together over it, in one piece.
  const auto limit = pipeline_->snapshot().limits().header_bytes;
  const std::string path(limit * 2 / 3, 'p');
  const std::string field(limit * 2 / 3, 'f');
  client.append(core::str_cat("GET http://plain.example.com/ok", path,
                              " HTTP/1.1\r\nHost: plain.example.com\r\nX-Big: ", field,
                              "\r\n\r\n"));
  auto out = run(client, upstream);
  EXPECT_EQ(out.record.reason, core::errc::header_too_large);
  EXPECT_EQ(std::string(agent.str()).rfind("HTTP/1.1 431 ", 0), 0u);
  EXPECT_TRUE(origin.str().empty());
}

TEST_F(exchange_test, ReportModeForwardsWhatItWouldHaveRefused) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append(
      "POST http://watched.example.com/elsewhere HTTP/1.1\r\nHost: watched.example.com\r\n"
      "Content-Length: 9\r\n\r\n{\"n\":1.5}");
  upstream.append("HTTP/1.1 204 No Content\r\n\r\n");
  auto out = run(client, upstream);
  ASSERT_FALSE(out.answered_by_proxy);
  EXPECT_EQ(out.record.decision(), "report");
  // The last thing it would have refused: the JSON field's type.
  EXPECT_EQ(out.record.reason, core::errc::body_denied);
  EXPECT_NE(std::string(origin.str()).find("{\"n\":1.5}"), std::string::npos);
}

TEST_F(exchange_test, RedactionFindsASecretSplitAcrossReads) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append("GET http://api.example.com/echo HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
  const std::string body = std::string("{\"echo\": \"") + kToken + "\", \"pad\": \"xxxxxxxx\"}";
  upstream.append(core::str_cat("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
                                "Content-Length: ", body.size(), "\r\n\r\n", body));
  upstream.read_size(7);  // the body arrives 7 bytes at a time
  auto out = run(client, upstream);
  ASSERT_FALSE(out.answered_by_proxy) << out.record.detail;
  const std::string got(agent.str());
  EXPECT_EQ(got.find(kToken), std::string::npos) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got;
  EXPECT_NE(got.find("\"pad\""), std::string::npos) << got;
  ASSERT_FALSE(out.record.redactions.empty());
}

TEST_F(exchange_test, ExpectContinueIsAnsweredByTheProxyAndNotForwarded) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append(
      "PUT http://plain.example.com/ok HTTP/1.1\r\nHost: plain.example.com\r\n"
      "Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello");
  upstream.append("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  auto out = run(client, upstream);
  ASSERT_FALSE(out.answered_by_proxy) << out.record.detail;
  const std::string got(agent.str());
  EXPECT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n", 0), 0u) << got;
  const std::string sent(origin.str());
  EXPECT_EQ(sent.find("Expect"), std::string::npos) << sent;
  EXPECT_EQ(sent.substr(sent.size() - 5), "hello");
  EXPECT_EQ(out.record.bytes_in, 5u);
}

TEST_F(exchange_test, AnUpstreamThatFailsMidBodyIsAnErrorAndTheClientSeesItCut) {
  stream client(ioc_), agent(ioc_), upstream(ioc_), origin(ioc_);
  client.connect(agent);
  upstream.connect(origin);
  client.append("GET http://plain.example.com/ok HTTP/1.1\r\nHost: plain.example.com\r\n\r\n");
  upstream.append("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
  origin.close();  // the origin goes away after ten of the hundred bytes
  auto out = run(client, upstream);
  ASSERT_FALSE(out.answered_by_proxy);
  EXPECT_EQ(out.record.decision(), "error");
  EXPECT_EQ(out.record.reason, core::errc::upstream_error);
  EXPECT_FALSE(out.result.client_continues);
  const std::string got(agent.str());
  EXPECT_NE(got.find("Content-Length: 100"), std::string::npos);
  EXPECT_EQ(got.substr(got.size() - 10), "only ten b");
}

// Every I/O step fails once, in turn: nothing crashes or hangs, and an exchange whose step
// failed is never recorded as a success it was not.
TEST_F(exchange_test, EachIoStepFailingOnceEndsTheExchangeCleanly) {
  bool completed = false;
  std::size_t failed_runs = 0;
  for (std::size_t n = 0; n < 64 && !completed; ++n) {
    beast::test::fail_count fc(n);
    stream client(ioc_, fc), agent(ioc_), upstream(ioc_, fc), origin(ioc_);
    client.connect(agent);
    upstream.connect(origin);
    client.append("GET http://plain.example.com/ok HTTP/1.1\r\nHost: plain.example.com\r\n\r\n");
    upstream.append(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
    auto out = run(client, upstream);
    const std::string got(agent.str());
    completed = got.find("\r\n\r\nhello") != std::string::npos;
    if (!completed) {
      ++failed_runs;
      EXPECT_FALSE(out.result.client_continues) << "step " << n;
    }
  }
  EXPECT_TRUE(completed) << "no run got through without a failure";
  // Reading the head, sending it, reading the answer and writing it back: each failed once.
  EXPECT_GE(failed_runs, 4u);
}

// A filter's wait is awaited under the session's own timeout, whichever thread answers.
class threaded_pending final : public filters::pending {
 public:
  explicit threaded_pending(bool answer) : answer_(answer) {}
  ~threaded_pending() override {
    if (t_.joinable()) t_.join();
  }
  void start(std::function<void(filters::verdict)> done) override {
    if (!answer_) return;
    t_ = std::thread([done = std::move(done)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      done(filters::verdict::next());
    });
  }
  void cancel() noexcept override { cancelled = true; }
  bool cancelled = false;

 private:
  bool answer_;
  std::thread t_;
};

TEST(PendingWait, AnAnswerFromAnotherThreadResumesAndSilenceTimesOut) {
  asio::io_context ioc;
  auto answered = std::make_shared<threaded_pending>(true);
  auto silent = std::make_shared<threaded_pending>(false);
  std::optional<filters::verdict> first, second;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        first = co_await await_pending(*answered, std::chrono::seconds(10));
        second = co_await await_pending(*silent, std::chrono::milliseconds(50));
      },
      asio::detached);
  ioc.run_for(std::chrono::seconds(15));
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->passes());
  EXPECT_FALSE(answered->cancelled);
  EXPECT_TRUE(second->refused());
  EXPECT_EQ(second->reason, core::errc::decision_timeout);
  EXPECT_TRUE(silent->cancelled);
}

}  // namespace
}  // namespace airlock::proxy
