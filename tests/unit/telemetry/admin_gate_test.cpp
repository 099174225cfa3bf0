// The admin port's gate (admin_gate.hpp): which Host names the listener (DNS rebinding), which
// browser requests come from another site or a page element, and what the listener answers
// and records for them.
#include "telemetry/admin_gate.hpp"
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

TEST(AdminGate, HostsThatNameTheListener) {
  const std::vector<std::string> names{"airlock-admin.internal"};
  for (std::string_view ok :
       {"127.0.0.1", "127.0.0.1:9464", "10.1.2.3:9464", "[::1]:9464", "[fd00::5]", "localhost",
        "localhost:19464", "LocalHost:9464", "airlock-admin.internal:9464",
        "Airlock-Admin.Internal", "127.0.0.1:"}) {
    EXPECT_TRUE(admin_host_allowed(ok, names)) << ok;
  }
  for (std::string_view bad :
       {"", ":9464", "rebind.test:9464", "x", "localhost.", "localhost.evil.test",
        "127.0.0.1.nip.io:9464", "admin.internal.evil.test", "2130706433:9464", "0x7f.1", "127.1",
        "[::1", "[::1]x", "[fe80::1%25eth0]:9464", "127.0.0.1:94a", "127.0.0.1:123456",
        "[::1]:9464:1", "127.0.0.1 :9464", "user@127.0.0.1"}) {
    EXPECT_FALSE(admin_host_allowed(bad, names)) << bad;
  }
  EXPECT_FALSE(admin_host_allowed("airlock-admin.internal", {}));
}

TEST(AdminGate, MisdirectedNamesTheReason) {
  admin_request_view v;
  v.host = "rebind.test:9464";
  v.host_count = 1;
  auto why = misdirected(v, {});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("Host rebind.test:9464 is not"), std::string::npos) << *why;
  v.host = "127.0.0.1:9464";
  EXPECT_FALSE(misdirected(v, {}));
  v.host_count = 2;
  EXPECT_TRUE(misdirected(v, {}));
  v.host.reset();
  v.host_count = 0;
  EXPECT_TRUE(misdirected(v, {}));  // HTTP/1.1 needs one (RFC 9112 section 3.2)
  v.http10 = true;
  EXPECT_FALSE(misdirected(v, {}));
}

TEST(AdminGate, CrossSiteAndPageElements) {
  auto view = [](bool safe, std::string_view path) {
    admin_request_view v;
    v.safe = safe;
    v.path = path;
    v.host = "127.0.0.1:9464";
    v.host_count = 1;
    return v;
  };
  // curl, Prometheus, a probe: no Fetch Metadata, no Origin.
  EXPECT_FALSE(cross_site(view(true, "/events")));
  EXPECT_FALSE(cross_site(view(false, "/reload")));
  // The console's own fetch and EventSource; a typed URL.
  auto v = view(true, "/events");
  v.fetch_site = "same-origin";
  v.fetch_mode = "cors";
  v.fetch_dest = "empty";
  EXPECT_FALSE(cross_site(v));
  v.fetch_site = "none";
  v.fetch_mode = "navigate";
  v.fetch_dest = "document";
  EXPECT_FALSE(cross_site(v));
  // <img src=http://127.0.0.1:9464/events> on another site, or on the same site (another port).
  for (std::string_view site : {"cross-site", "same-site"}) {
    v = view(true, "/events");
    v.fetch_site = site;
    v.fetch_mode = "no-cors";
    v.fetch_dest = "image";
    auto why = cross_site(v);
    ASSERT_TRUE(why) << site;
    EXPECT_NE(why->find("cross-site request refused"), std::string::npos) << *why;
  }
  // A page element even where the browser calls it same-origin.
  v.fetch_site = "same-origin";
  ASSERT_TRUE(cross_site(v));
  EXPECT_NE(cross_site(v)->find("Sec-Fetch-Dest: image"), std::string::npos);
  // A link to the console from a runbook is a navigation: served. To anything else: refused.
  v = view(true, "/console");
  v.fetch_site = "cross-site";
  v.fetch_mode = "navigate";
  v.fetch_dest = "document";
  EXPECT_FALSE(cross_site(v));
  v.path = "/approvals";
  EXPECT_TRUE(cross_site(v));
  v.path = "/console";
  v.fetch_dest = "iframe";
  EXPECT_TRUE(cross_site(v));
  v.safe = false;  // a form posted from another site
  v.fetch_dest = "document";
  EXPECT_TRUE(cross_site(v));
  // Origin: this listener's own (as the browser sends it on a POST), or refused.
  v = view(false, "/reload");
  v.origin = "http://127.0.0.1:9464";
  EXPECT_FALSE(cross_site(v));
  for (std::string_view o : {"http://127.0.0.1:8000", "null", "https://127.0.0.1:9464",
                             "http://rebind.test:9464", "http://127.0.0.1:9464.evil"}) {
    v.origin = o;
    EXPECT_TRUE(cross_site(v)) << o;
  }
}

TEST(AdminGate, LoggableKeepsPrintableAsciiOnly) {
  EXPECT_EQ(loggable("a b\x01\x7f\xff"), "a b???");
  EXPECT_EQ(loggable(std::string(150, 'a')), std::string(100, 'a') + "...");
}

// The listener itself: what a refused request gets, and that a refused mutation is recorded
// once through `refused` and reaches no handler.
class AdminGateServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_handlers h;
    h.reload = [this](const admin_actor&, std::string& message) {
      ++reloads;
      message = "reloaded";
      return true;
    };
    h.approvals_json = [] { return std::string(R"({"pending":[]})"); };
    h.refused = [this](const admin_caller& c, std::string_view reason) {
      std::lock_guard lk(mu);
      refusals.emplace_back(std::string(c.path) + " " + std::string(reason));
    };
    h.host_names = {"airlock-admin.internal"};
    work.emplace(ioc.get_executor());
    server = std::make_unique<admin_server>(
        ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0), std::move(h));
    endpoint = server->local_endpoint();
    server->start();
    runner = std::thread([this] { ioc.run(); });
  }

  void TearDown() override {
    server->stop();
    server.reset();
    work.reset();
    runner.join();
  }

  std::optional<http::response<http::string_body>> raw(std::string_view head) {
    client c(endpoint);
    c.send(std::string(head) + "\r\n");
    return c.read();
  }

  std::vector<std::string> recorded() {
    std::lock_guard lk(mu);
    return refusals;
  }

  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::unique_ptr<admin_server> server;
  tcp::endpoint endpoint;
  std::thread runner;
  std::atomic<int> reloads{0};
  std::mutex mu;
  std::vector<std::string> refusals;  // guarded by mu
};

TEST_F(AdminGateServerTest, ForeignHostIs421ForReadsAndMutations) {
  auto res = raw("GET /approvals HTTP/1.1\r\nHost: rebind.test:9464\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::misdirected_request);
  EXPECT_NE(res->body().find("is not an address of this admin listener"), std::string::npos);
  EXPECT_TRUE(recorded().empty());  // a read is no action: nothing to record
  res =
      raw("POST /reload HTTP/1.1\r\nHost: rebind.test:9464\r\nOrigin: http://rebind.test:9464\r\n"
          "Sec-Fetch-Site: same-origin\r\nContent-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::misdirected_request);
  EXPECT_EQ(reloads.load(), 0);
  const auto r = recorded();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].starts_with("/reload Host rebind.test:9464 is not")) << r[0];
  // The listener's names: an address, localhost, a listed name; no Host at all in HTTP/1.1.
  for (std::string_view host : {"127.0.0.1", "localhost:1234", "airlock-admin.internal:9464"}) {
    res = raw(std::string("GET /approvals HTTP/1.1\r\nHost: ") + std::string(host) + "\r\n");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->result(), http::status::ok) << host;
  }
  res = raw("GET /approvals HTTP/1.1\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::bad_request);
}

TEST_F(AdminGateServerTest, CrossSitePostIsRecordedOnce) {
  auto res =
      raw("POST /reload HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.test\r\n"
          "Content-Length: 0\r\n");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::forbidden);
  EXPECT_EQ(res->body(), "cross-site request refused (Origin: http://evil.test)\n");
  EXPECT_EQ(reloads.load(), 0);
  EXPECT_EQ(recorded(), std::vector<std::string>{
                            "/reload cross-site request refused (Origin: http://evil.test)"});
}

}  // namespace
}  // namespace airlock::telemetry
