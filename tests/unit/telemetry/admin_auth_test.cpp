// Who may make a mutating request on the admin port: Bearer parsing, the loopback-only rule
// without operator tokens, the authorizer's verdict (401 with WWW-Authenticate) and the
// cross-site refusal that comes before it.
#include "telemetry/admin_auth.hpp"
#include "telemetry/admin_server.hpp"

#include "admin_test_client.hpp"

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>

#include <atomic>
#include <mutex>
#include <thread>

namespace airlock::telemetry {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

TEST(AdminAuth, BearerToken) {
  EXPECT_EQ(bearer_token("Bearer abc.DEF-1_~+/="), "abc.DEF-1_~+/=");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");  // the scheme is case-insensitive
  EXPECT_EQ(bearer_token("BEARER abc"), "abc");
  for (std::string_view bad : {"", "Bearer", "Bearer ", "Basic YTpi", "Bearerabc", "Bearer a b",
                               "Bearer a,b", "Token abc"}) {
    EXPECT_FALSE(bearer_token(bad).has_value()) << bad;
  }
}

TEST(AdminAuth, LoopbackOnlyWithoutOperators) {
  std::string reason;
  admin_caller c;
  for (auto addr : {"127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"}) {
    c.peer = tcp::endpoint(net::ip::make_address(addr), 4000);
    EXPECT_EQ(loopback_only(c, reason), "local") << addr;
  }
  for (auto addr : {"10.0.0.1", "192.168.1.2", "fd00::1", "::ffff:10.0.0.1"}) {
    c.peer = tcp::endpoint(net::ip::make_address(addr), 4000);
    EXPECT_FALSE(loopback_only(c, reason).has_value()) << addr;
    EXPECT_NE(reason.find("operator token required"), std::string::npos);
  }
  EXPECT_EQ(endpoint_string(tcp::endpoint(net::ip::make_address("::1"), 9)), "[::1]:9");
  EXPECT_EQ(endpoint_string(tcp::endpoint(net::ip::make_address("10.1.2.3"), 80)), "10.1.2.3:80");
}

class AdminAuthServerTest : public ::testing::Test {
 protected:
  void start(bool with_authorizer) {
    admin_handlers h;
    h.reload = [this](const admin_actor& by, std::string& message) {
      std::lock_guard lk(mu);
      actors.push_back(by.by);
      message = "reloaded";
      return true;
    };
    h.agent_control = [this](const admin_actor& by, std::string_view, bool, std::string& m) {
      std::lock_guard lk(mu);
      actors.push_back(by.by);
      m = "ok";
      return 200;
    };
    h.approval_decide = [this](const admin_actor& by, std::string_view, bool, std::string_view,
                               admin_handlers::decision_done done) {
      {
        std::lock_guard lk(mu);
        actors.push_back(by.by);
      }
      done(200, "ok");
    };
    h.policy_json = [] { return std::string("{}"); };
    if (with_authorizer) {
      h.authorize = [this](const admin_caller& c,
                           std::string& reason) -> std::optional<std::string> {
        ++authorize_calls;
        {
          std::lock_guard lk(mu);
          seen_paths.emplace_back(c.path);
        }
        if (c.authorization == "Bearer good") return std::string("alice");
        reason = "unknown operator token";
        return std::nullopt;
      };
    }
    work.emplace(ioc.get_executor());
    server = std::make_unique<admin_server>(
        ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), std::move(h));
    endpoint = server->local_endpoint();
    server->start();
    runner = std::thread([this] { ioc.run(); });
  }

  void TearDown() override {
    if (!runner.joinable()) return;
    server->stop();
    server.reset();
    work.reset();
    runner.join();
  }

  std::vector<std::string> actors_seen() {
    std::lock_guard lk(mu);
    return actors;
  }

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::unique_ptr<admin_server> server;
  tcp::endpoint endpoint;
  std::thread runner;
  std::mutex mu;
  std::vector<std::string> actors;      // guarded by mu
  std::vector<std::string> seen_paths;  // guarded by mu
  std::atomic<int> authorize_calls{0};
};

constexpr const char* mutations[] = {"/reload", "/agents/a/stop", "/agents/a/resume",
                                     "/approvals/1/approve", "/approvals/1/refuse"};

TEST_F(AdminAuthServerTest, EveryMutationNeedsTheToken) {
  start(true);
  client c(endpoint);
  for (const char* path : mutations) {
    for (std::string_view extra :
         {"", "Authorization: Bearer bad\r\n", "Authorization: Basic YWxpY2U6Z29vZA==\r\n"}) {
      auto res = c.request("POST", path, std::string(extra) + "Content-Length: 0\r\n");
      ASSERT_TRUE(res) << path;
      EXPECT_EQ(res->result(), http::status::unauthorized) << path << " " << extra;
      EXPECT_EQ((*res)[http::field::www_authenticate], "Bearer realm=\"airlock-admin\"");
      EXPECT_EQ(res->body(), "unknown operator token\n");
    }
    auto res = c.request("POST", path, "Authorization: Bearer good\r\nContent-Length: 0\r\n");
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->result(), http::status::ok) << path;
  }
  EXPECT_EQ(actors_seen(), std::vector<std::string>(std::size(mutations), "alice"));
  // Reading needs no token.
  auto res = c.request("GET", "/policy");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  std::lock_guard lk(mu);
  EXPECT_EQ(seen_paths.front(), "/reload");
}

TEST_F(AdminAuthServerTest, CrossSiteIsRefusedEvenWithTheToken) {
  start(true);
  client c(endpoint);
  for (const char* path : mutations) {
    for (std::string_view extra : {"Sec-Fetch-Site: cross-site\r\n", "Origin: http://evil.test\r\n",
                                   "Sec-Fetch-Site: same-site\r\n"}) {
      auto res = c.request(
          "POST", path, std::string(extra) + "Authorization: Bearer good\r\nContent-Length: 0\r\n");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->result(), http::status::forbidden) << path << " " << extra;
    }
  }
  EXPECT_EQ(authorize_calls.load(), 0);
  EXPECT_TRUE(actors_seen().empty());
}

TEST_F(AdminAuthServerTest, WithoutAnAuthorizerLoopbackIsLocal) {
  start(false);
  client c(endpoint);
  for (const char* path : mutations) {
    auto res = c.request("POST", path, "Content-Length: 0\r\n");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result(), http::status::ok) << path;
  }
  EXPECT_EQ(actors_seen(), std::vector<std::string>(std::size(mutations), "local"));
}

}  // namespace
}  // namespace airlock::telemetry
