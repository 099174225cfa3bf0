#include "filters/mcp/mcp_filter.hpp"
#include "filters/chain.hpp"
#include "filters/pipeline.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/redaction/retired_secrets.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

#include <string>
#include <utility>
#include <vector>

// The MCP filter in the real chain of a policy, on hand-built exchanges (no sockets): methods,
// tools, argument constraints, DLP in arguments, batches, notifications, labels, report mode.
namespace airlock::filters {
namespace {
namespace http = boost::beast::http;

const char* kPolicy = R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
agents:
  default: {rules: [mcp, quiet]}
rules:
  - name: mcp
    hosts: [mcp.example.com]
    ports: [80]
    mcp:
      methods: [initialize, notifications/initialized, tools/list, tools/call]
      tools:
        echo:
        read_file:
          arguments:
            path: {type: string, pattern: '/workspace/.*', required: true}
        search:
          rate: {requests_per_minute: 2}
      max_batch: 4
  - name: quiet
    hosts: [quiet.example.com]
    ports: [80]
    mode: report
    dlp: {action: report}
    mcp: {tools: [echo]}
)";

class mcp_test : public ::testing::Test {
 protected:
  void SetUp() override { load(kPolicy); }

  void load(const std::string& yaml, redaction::retired_secrets* retired = nullptr) {
    auto r = policy::load_string(yaml, "mcp.yaml");
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    lasting_state state{&rates_, nullptr, retired};
    auto built = pipeline::build(r.policy, state);
    for (const auto& e : built.errors)
      ADD_FAILURE() << e;
    ASSERT_TRUE(built.built);
    pipeline_ = built.built;
  }

  // Runs a POST of `body` through the chain; returns whether it may go on.
  bool post(std::string_view body, std::string_view host = "mcp.example.com") {
    chain_.reset();  // it ends (on_end) the previous exchange, which must still be there
    req_ = {};
    for (const auto& [name, value] : head_)
      req_.insert(name, value);
    req_.method(http::verb::post);
    req_.target("/mcp");
    ex_ = std::make_unique<exchange>();
    auto& ex = *ex_;
    ex.snapshot = &pipeline_->snapshot();
    ex.request = &req_;
    ex.target.host = *net::normalize_host(host);
    ex.target.port = 80;
    ex.path_and_query = "/mcp";
    ex.path = "/mcp";
    ex.agent = ex.snapshot->find_agent("default");
    ex.record.agent = "default";
    ex.body_limit = ex.snapshot->limits().body_bytes;
    ex.has_body = !body.empty();
    ex.content_length = body.size();
    chain_ = std::make_unique<chain>(pipeline_->factories(), ex);
    if (!chain_->request_head().passes()) return false;
    EXPECT_EQ(chain_->request_body_use(), body_use::whole);
    return chain_->request_body(body, true).passes();
  }

  exchange& ex() { return *ex_; }
  std::string answer() const { return ex_->record.answer ? ex_->record.answer->body : ""; }

  // The POST's head fields (besides the method and target).
  std::vector<std::pair<http::field, std::string>> head_{
      {http::field::content_type, "application/json"}};
  rate_limit::registry rates_;
  std::shared_ptr<const pipeline> pipeline_;
  http::request<http::empty_body> req_;
  std::unique_ptr<exchange> ex_;
  std::unique_ptr<chain> chain_;
};

std::string call(std::string_view tool, std::string_view args, int id = 1) {
  return std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) + R"(","arguments":)" +
         std::string(args) + "}}";
}

TEST_F(mcp_test, AllowedCallPassesAndIsLabelled) {
  EXPECT_TRUE(post(call("read_file", R"({"path":"/workspace/a.txt"})")));
  ASSERT_EQ(ex().record.mcp.size(), 1u);
  EXPECT_EQ(ex().record.mcp[0].method, "tools/call");
  EXPECT_EQ(ex().record.mcp[0].tool, "read_file");
  EXPECT_FALSE(ex().record.answer);
  EXPECT_TRUE(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_EQ(ex().record.mcp[0].tool, "-");
}

TEST_F(mcp_test, RefusalsAreJsonRpcErrors) {
  struct refused {
    std::string body;
    core::errc reason;
    const char* code;
  };
  for (const refused& r : {
           refused{call("delete_repository", "{}", 9), core::errc::mcp_tool_denied, "-32001"},
           refused{call("read_file", R"({"path":"/etc/passwd"})", 9), core::errc::mcp_params_denied,
                   "-32602"},
           refused{call("read_file", "{}", 9), core::errc::mcp_params_denied, "-32602"},
           refused{R"({"jsonrpc":"2.0","id":9,"method":"resources/read"})",
                   core::errc::mcp_method_denied, "-32601"},
           refused{call("echo", R"({"text":"key AKIAIOSFODNN7EXAMPLE"})", 9),
                   core::errc::dlp_blocked, "-32002"},
       }) {
    EXPECT_FALSE(post(r.body)) << r.body;
    EXPECT_EQ(ex().record.reason, r.reason) << r.body;
    ASSERT_TRUE(ex().record.answer) << r.body;
    EXPECT_EQ(ex().record.answer->status, 200u);
    EXPECT_NE(answer().find(R"("id":9,"error":{"code":)" + std::string(r.code)), std::string::npos)
        << answer();
    EXPECT_EQ(ex().record.detail.find("AKIAIOSFODNN7EXAMPLE"), std::string::npos);
    EXPECT_EQ(answer().find("AKIAIOSFODNN7EXAMPLE"), std::string::npos);
  }
  // The argument rule is named, never the value.
  post(call("read_file", R"({"path":"/etc/passwd"})"));
  EXPECT_NE(ex().record.detail.find("argument 'path' breaks pattern"), std::string::npos)
      << ex().record.detail;
  EXPECT_EQ(ex().record.detail.find("/etc/passwd"), std::string::npos);
  // The unlisted tool is "other" in the labels.
  post(call("delete_repository", "{}"));
  EXPECT_EQ(ex().record.mcp[0].tool, "other");
  post(R"({"jsonrpc":"2.0","id":9,"method":"x/custom"})");
  EXPECT_EQ(ex().record.mcp[0].method, "other");
}

// A secret's value a reload replaced is refused in a call's arguments as the current one is
// (the rule reads them with the default DLP classes: it has no `dlp` of its own).
TEST_F(mcp_test, ARotatedSecretsOldValueInArgumentsIsRefused) {
  constexpr const char* kOld = "rot-MCPTEST-old-value-1111111111";
  const std::string policy = std::string(kPolicy) + R"(
secrets:
  rotated: {env: AIRLOCK_UT_MCP_ROTATED, hosts: [api.example.com]}
)";
  redaction::retired_secrets retired;
  ::setenv("AIRLOCK_UT_MCP_ROTATED", kOld, 1);
  load(policy, &retired);
  ::setenv("AIRLOCK_UT_MCP_ROTATED", "rot-MCPTEST-new-value-2222222222", 1);
  load(policy, &retired);
  ::unsetenv("AIRLOCK_UT_MCP_ROTATED");
  EXPECT_FALSE(post(call("echo", std::string(R"({"text":"key )") + kOld + R"("})")));
  EXPECT_EQ(ex().record.reason, core::errc::dlp_blocked);
  ASSERT_EQ(ex().record.dlp.size(), 1u);
  EXPECT_EQ(ex().record.dlp[0].cls, "secret:rotated");
}

TEST_F(mcp_test, OneRefusedCallRefusesTheBatch) {
  const std::string batch =
      "[" + call("echo", R"({"text":"hi"})", 1) + "," + call("delete_repository", "{}", 2) + "]";
  EXPECT_FALSE(post(batch));
  EXPECT_EQ(ex().record.reason, core::errc::mcp_tool_denied);
  EXPECT_NE(ex().record.detail.find("batch refused: message 2"), std::string::npos);
  EXPECT_NE(answer().find(R"("id":1,"error":{"code":-32003)"), std::string::npos) << answer();
  EXPECT_NE(answer().find(R"("id":2,"error":{"code":-32001)"), std::string::npos) << answer();
  ASSERT_EQ(ex().record.mcp.size(), 2u);
  // An allowed batch passes.
  EXPECT_TRUE(post("[" + call("echo", "{}", 1) + "," + call("echo", "{}", 2) + "]"));
  // Over max_batch (4): refused as invalid.
  std::string big = "[";
  for (int i = 0; i < 5; ++i)
    big += (i ? "," : "") + call("echo", "{}", i);
  EXPECT_FALSE(post(big + "]"));
  EXPECT_EQ(ex().record.reason, core::errc::mcp_invalid);
}

TEST_F(mcp_test, NotificationsAndMalformedBodies) {
  // A refused notification has no id to answer: the proxy's own 403.
  EXPECT_FALSE(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled"})"));
  EXPECT_EQ(ex().record.reason, core::errc::mcp_method_denied);
  EXPECT_FALSE(ex().record.answer);
  // Not JSON: HTTP 400 with a JSON-RPC parse error.
  EXPECT_FALSE(post("{not json"));
  EXPECT_EQ(ex().record.reason, core::errc::mcp_invalid);
  ASSERT_TRUE(ex().record.answer);
  EXPECT_EQ(ex().record.answer->status, 400u);
  // No body at all.
  EXPECT_FALSE(post(""));
  EXPECT_EQ(ex().record.reason, core::errc::mcp_invalid);
  // Responses to the server's requests pass.
  EXPECT_TRUE(post(R"({"jsonrpc":"2.0","id":"srv-1","result":{}})"));
  EXPECT_EQ(ex().record.mcp[0].method, "response");
}

// A server may decode the body in the charset the request names (the TypeScript SDK's HTTP+SSE
// server transport: UTF-7 too), where ASCII JSON naming `echo` to the filter names another tool:
// a body is read only as application/json in UTF-8, unencoded.
TEST_F(mcp_test, BodyReadOnlyAsUtf8Json) {
  const std::string smuggled = call(
      "echo",
      R"({"text":"+ACIAfQAsACIAbgBhAG0AZQAiADoAIgBkAGUAbABlAHQAZQBfAHIAZQBwAG8AcwBpAHQAbwByAHkA-"})");
  using lines = std::vector<std::pair<http::field, std::string>>;
  for (const auto& [head, why] : std::vector<std::pair<lines, std::string>>{
           {{{http::field::content_type, "application/json; charset=utf-7"}}, "charset 'utf-7'"},
           {{{http::field::content_type, "application/json; CHARSET=\"UTF-7\""}},
            "charset 'UTF-7'"},
           {{{http::field::content_type, "application/json"},
             {http::field::content_type, "application/json; charset=utf-7"}},
            "Content-Type in several field lines"},
           {{{http::field::content_type, "application/json"},
             {http::field::content_encoding, "gzip"}},
            "Content-Encoding 'gzip'"},
           {{{http::field::content_type, "text/plain"}}, "application/json expected"},
           {{}, "no Content-Type"},
       }) {
    head_ = head;
    EXPECT_FALSE(post(smuggled)) << why;
    EXPECT_EQ(ex().record.reason, core::errc::mcp_invalid) << why;
    EXPECT_NE(ex().record.detail.find(why), std::string::npos) << ex().record.detail;
    EXPECT_FALSE(ex().record.answer);  // the proxy's own 400: no JSON-RPC was read
    EXPECT_TRUE(ex().record.mcp.empty());
  }
  for (const char* ok : {"application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\""}) {
    head_ = {{http::field::content_type, ok}};
    EXPECT_TRUE(post(smuggled)) << ok;
  }
}

TEST(mcp_policy, UpgradesAreRefused) {
  // WebSocket messages are not read by the MCP filter: the two together do not load.
  auto r = policy::load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
agents: {default: {rules: [m]}}
rules:
  - name: m
    hosts: [a.example]
    ports: [80]
    upgrades: [websocket]
    mcp: {tools: [echo]}
)",
                               "p.yaml");
  EXPECT_FALSE(r.policy);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            "p.yaml:8:15: rules[0].upgrades: a rule with mcp cannot allow upgrades: the MCP "
            "filter reads HTTP bodies, not WebSocket messages, which would pass uninspected");
}

TEST_F(mcp_test, ReportModeAndReportingDlp) {
  // mode: report lets the refused tool through, recorded; dlp action report passes a finding.
  EXPECT_TRUE(post(call("delete_repository", "{}"), "quiet.example.com"));
  EXPECT_TRUE(ex().record.reported);
  EXPECT_EQ(ex().record.reason, core::errc::mcp_tool_denied);
  EXPECT_TRUE(post(call("echo", R"({"t":"AKIAIOSFODNN7EXAMPLE"})"), "quiet.example.com"));
  ASSERT_FALSE(ex().record.dlp.empty());
  EXPECT_EQ(ex().record.dlp[0].location, "mcp-arguments");
  EXPECT_EQ(ex().record.dlp[0].action, "report");
}

TEST_F(mcp_test, PerToolRateLimit) {
  // Two calls a minute of `search`, per agent; other tools are not limited by it.
  EXPECT_TRUE(post(call("search", "{}", 1)));
  EXPECT_TRUE(post(call("search", "{}", 2)));
  EXPECT_FALSE(post(call("search", "{}", 3)));
  EXPECT_EQ(ex().record.reason, core::errc::rate_limited);
  EXPECT_NE(answer().find(R"("id":3,"error":{"code":-32004)"), std::string::npos) << answer();
  EXPECT_NE(ex().record.detail.find("tool search (rule mcp, agent default) requests_per_minute=2"),
            std::string::npos)
      << ex().record.detail;
  EXPECT_GT(ex().record.retry_after, 0u);
  EXPECT_TRUE(post(call("echo", "{}", 4)));
}

TEST(mcp_policy, ErrorsNameTheKey) {
  auto r = policy::load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
agents: {default: {rules: [m]}}
rules:
  - name: m
    hosts: [a.example]
    ports: [80]
    mcp:
      methods: [ping, ping]
      tools:
        t:
          arguments: {n: {type: string, minimum: 3}}
          rate: {concurrent: 2}
        u: {color: red}
)",
                               "p.yaml");
  EXPECT_FALSE(r.policy);
  std::string all;
  for (const auto& e : r.errors)
    all += e.to_string() + "\n";
  EXPECT_NE(all.find("rules[0].mcp.tools.t.rate"), std::string::npos) << all;
  EXPECT_NE(all.find("rules[0].mcp.tools.u.color"), std::string::npos) << all;
}

}  // namespace
}  // namespace airlock::filters
