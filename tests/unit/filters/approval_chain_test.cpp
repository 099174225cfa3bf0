// Held requests in the real chain of a policy (no sockets): a rule's `ask` is a wait whose
// outcome the registry gives; a grant lets the next request through at once; with
// access_requests alone, a request no rule allows passes only under a grant, else it keeps the
// decision's own refusal; the reserved name is answered, never decided.
#include "filters/approval/registry.hpp"
#include "filters/chain.hpp"
#include "filters/pipeline.hpp"
#include "filters/rate_limit/registry.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace airlock::filters {
namespace {
namespace http = boost::beast::http;
using namespace std::chrono_literals;

class approval_chain_test : public ::testing::Test {
 protected:
  void load(const std::string& yaml) {
    auto r = policy::load_string(yaml, "approvals.yaml");
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    lasting_state state{&rates_, &approvals_};
    auto built = pipeline::build(r.policy, state);
    ASSERT_TRUE(built.built);
    pipeline_ = built.built;
  }

  exchange& request(std::string_view host, std::string_view target = "/x",
                    http::verb method = http::verb::get) {
    // Every exchange (and its head) lives as long as the test: chains made earlier still
    // refer to theirs.
    auto& req = *heads_.emplace_back(std::make_unique<http::request<http::empty_body>>());
    req.method(method);
    req.target(target);
    auto& ex = *exchanges_.emplace_back(std::make_unique<exchange>());
    ex.snapshot = &pipeline_->snapshot();
    ex.request = &req;
    ex.target.host = *net::normalize_host(host);
    ex.target.port = 80;
    ex.path_and_query = std::string(target);
    ex.path = ex.path_and_query.substr(0, ex.path_and_query.find('?'));
    ex.agent = ex.snapshot->find_agent("default");
    ex.record.agent = "default";
    ex.body_limit = ex.snapshot->limits().body_bytes;
    return ex;
  }

  std::uint64_t pending_id() {
    auto j = boost::json::parse(approvals_.json());
    return j.at("pending").as_array().at(0).at("id").to_number<std::uint64_t>();
  }

  rate_limit::registry rates_;
  approval::registry approvals_;
  std::shared_ptr<const pipeline> pipeline_;
  std::vector<std::unique_ptr<http::request<http::empty_body>>> heads_;
  std::vector<std::unique_ptr<exchange>> exchanges_;
};

TEST_F(approval_chain_test, AskWaitsForTheOperatorThenGrantsPass) {
  load(R"(
agents: {default: {rules: [asked]}}
rules:
  - {name: asked, hosts: [a.example.com], ports: [80], ask: {timeout: 5s}}
)");
  auto& ex = request("a.example.com");
  chain c(pipeline_->factories(), ex);
  auto v = c.request_head();
  ASSERT_TRUE(v.waits());
  EXPECT_EQ(v.waiting->wait_limit(60s), 5s);
  std::optional<verdict> outcome;
  v.waiting->start([&](verdict o) { outcome = std::move(o); });
  approval::decision d;
  d.approve = true;
  d.scope = approval::scope::agent_host;
  d.by = "test";
  std::string message;
  ASSERT_TRUE(approvals_.decide(pending_id(), d, message)) << message;
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(c.resume(std::move(*outcome)).passes());
  // The grant covers the next one: no wait.
  auto& again = request("a.example.com", "/y");
  chain c2(pipeline_->factories(), again);
  EXPECT_TRUE(c2.request_head().passes());
}

TEST_F(approval_chain_test, RefusedAndOverTheBounds) {
  load(R"(
approvals: {max_held_per_agent: 1}
agents: {default: {rules: [asked]}}
rules:
  - {name: asked, hosts: [a.example.com], ports: [80], ask: true}
)");
  auto& ex = request("a.example.com");
  chain c(pipeline_->factories(), ex);
  auto v = c.request_head();
  ASSERT_TRUE(v.waits());
  // A second while the first is held: over max_held_per_agent, refused at once.
  auto& other = request("a.example.com", "/z");
  chain c2(pipeline_->factories(), other);
  auto over = c2.request_head();
  ASSERT_TRUE(over.refused());
  EXPECT_EQ(other.record.reason, core::errc::approval_limit);
  std::optional<verdict> outcome;
  v.waiting->start([&](verdict o) { outcome = std::move(o); });
  approval::decision no;
  no.by = "test";
  std::string message;
  ASSERT_TRUE(approvals_.decide(pending_id(), no, message));
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(c.resume(std::move(*outcome)).refused());
  EXPECT_EQ(ex.record.reason, core::errc::approval_refused);
}

TEST_F(approval_chain_test, UnmatchedPassesOnlyUnderAGrant) {
  load(R"(
approvals: {access_requests: true}
agents: {default: {rules: []}}
)");
  {
    auto& ex = request("b.example.com");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::host_denied);
  }
  approval::request_info r;
  r.agent = "default";
  r.host = "b.example.com";
  r.port = 80;
  std::string why, message;
  const auto id = approvals_.ask(r, {}, 10s, why);
  ASSERT_NE(id, 0u) << why;
  approval::decision d;
  d.approve = true;
  d.by = "test";
  ASSERT_TRUE(approvals_.decide(id, d, message)) << message;
  auto& ex = request("b.example.com");
  chain c(pipeline_->factories(), ex);
  EXPECT_TRUE(c.request_head().passes());
  EXPECT_EQ(ex.record.reason, core::errc::ok);
}

TEST_F(approval_chain_test, WhatDlpBlocksIsNeverHeldAndAHoldShowsWhatDlpRedacted) {
  load(R"(
agents: {default: {rules: [blocked, reported]}}
rules:
  - {name: blocked, hosts: [a.example.com], ports: [80], ask: {timeout: 5s}, dlp: {action: block}}
  - {name: reported, hosts: [b.example.com], ports: [80], ask: {timeout: 5s},
     dlp: {action: report}}
)");
  const std::string key = "AKIAIOSFODNN7EXAMPLE";
  {
    // The operator is never asked to approve what DLP refuses.
    auto& ex = request("a.example.com", "/upload/" + key + "/x");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
    EXPECT_EQ(approvals_.held_count(), 0u);
  }
  // Under report it is held, and listed with the path the exchange record has.
  auto& ex = request("b.example.com", "/upload/" + key + "/x");
  chain c(pipeline_->factories(), ex);
  auto v = c.request_head();
  ASSERT_TRUE(v.waits());
  EXPECT_EQ(ex.record.path, "/upload/[REDACTED:dlp]/x");
  const std::string listed = approvals_.json();
  EXPECT_EQ(listed.find(key), std::string::npos) << listed;
  EXPECT_NE(listed.find("/upload/[REDACTED:dlp]/x"), std::string::npos) << listed;
  v.waiting->abandon();
}

TEST_F(approval_chain_test, ReservedNameIsAnsweredNeverDecided) {
  load(R"(
approvals: {access_requests: true}
agents: {default: {rules: []}}
)");
  auto& ex = request("airlock.internal", "/request-access?id=99");
  chain c(pipeline_->factories(), ex);
  EXPECT_TRUE(c.request_head().refused());
  EXPECT_EQ(ex.record.reason, core::errc::proxy_endpoint);
  EXPECT_EQ(ex.record.answer_status, 404u);
  auto& post = request("airlock.internal", "/request-access", http::verb::post);
  chain c2(pipeline_->factories(), post);
  ASSERT_TRUE(c2.request_head().passes());
  ASSERT_EQ(c2.request_body_use(), body_use::whole);
  // Read in the body hook, asked at forward: after DLP read the body.
  EXPECT_TRUE(
      c2.request_body(R"({"host":"c.example.com","port":443,"reason":"<b>"})", true).passes());
  EXPECT_TRUE(c2.forward().refused());
  EXPECT_EQ(post.record.answer_status, 202u);
  EXPECT_NE(post.record.answer_body.find("\"outcome\":\"pending\""), std::string::npos)
      << post.record.answer_body;
}

}  // namespace
}  // namespace airlock::filters
