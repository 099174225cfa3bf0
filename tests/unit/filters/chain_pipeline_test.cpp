#include "filters/pipeline.hpp"

#include "filters/chain.hpp"
#include "filters/rate_limit/registry.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

// The real controls of one policy, in the chain, on hand-built exchanges: no sockets. Each test
// drives the hooks the codec would call, in its order.
namespace airlock::filters {
namespace {
namespace http = boost::beast::http;

constexpr const char* kToken = "sk-REALVALUE-0123456789abcdef0123456789";
constexpr const char* kPlaceholder = "sk-PLACEHOLDER-000000000000000000000000";

std::int64_t fixed_clock() noexcept {
  return 1'000'000'000'000;  // the same instant for every request: buckets do not refill
}

class pipeline_test : public ::testing::Test {
 protected:
  void load(const std::string& rules, const std::string& agent_extra = "") {
    ::setenv("AIRLOCK_TEST_CHAIN_KEY", kToken, 1);
    const std::string yaml = std::string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
secrets:
  key: {env: AIRLOCK_TEST_CHAIN_KEY, placeholder: ')") +
                             kPlaceholder + R"(', hosts: [api.example.com]}
agents:
  default: {rules: [api, report, other])" +
                             agent_extra + R"(}
rules:
)" + rules;
    auto r = policy::load_string(yaml, "chain.yaml");
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    lasting_state state{&rates_};
    auto built = pipeline::build(r.policy, state);
    ASSERT_TRUE(built.built);
    pipeline_ = built.built;
  }

  // A fresh exchange for METHOD http://HOST:80TARGET, as the HTTP/1.1 codec fills it.
  exchange& request(http::verb method, std::string_view host, std::string_view target) {
    req_ = {};
    req_.method(method);
    req_.target(target);
    ex_ = std::make_unique<exchange>();
    auto& ex = *ex_;
    ex.snapshot = &pipeline_->snapshot();
    ex.request = &req_;
    ex.target.host = *net::normalize_host(host);
    ex.target.port = 80;
    ex.path_and_query = std::string(target);
    ex.path = ex.path_and_query.substr(0, ex.path_and_query.find('?'));
    ex.agent = ex.snapshot->find_agent("default");
    ex.record.agent = "default";
    ex.body_limit = ex.snapshot->limits().body_bytes;
    ex.clock = fixed_clock;
    return ex;
  }

  rate_limit::registry rates_;
  std::shared_ptr<const pipeline> pipeline_;
  http::request<http::empty_body> req_;
  std::unique_ptr<exchange> ex_;
};

const char* kRules = R"(
  - name: api
    hosts: [api.example.com]
    ports: [80]
    methods: [GET, POST]
    query: {params: {page: '[0-9]+'}, unknown: strip}
    body: {json: {model: {type: string, enum: [small]}}}
    inject: {headers: {Authorization: 'Bearer ${secrets.key}'}}
    rate: {requests_per_second: 1, burst: 2}
  - name: report
    hosts: [report.example.com]
    ports: [80]
    mode: report
    paths: ['^/allowed$']
    query: {params: {page: '[0-9]+'}, unknown: refuse}
  - name: other
    hosts: [other.example.com]
    ports: [80]
)";

TEST_F(pipeline_test, AnAllowedRequestPassesAndIsRewrittenForTheUpstream) {
  load(kRules);
  auto& ex = request(http::verb::get, "api.example.com", "/v1?page=2&debug=1");
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes()) << ex.record.detail;
  EXPECT_EQ(ex.record.rule, "api");
  // Unknown parameters stripped; the JSON check holds the body whole.
  EXPECT_EQ(ex.path_and_query, "/v1?page=2");
  EXPECT_EQ(c.request_body_use(), body_use::whole);
  ASSERT_TRUE(c.request_body(R"({"model":"small"})", true).passes());
  ASSERT_TRUE(c.forward().passes());
  EXPECT_EQ(req_[http::field::authorization], std::string("Bearer ") + kToken);
  ASSERT_EQ(ex.record.injected.size(), 1u);
  EXPECT_EQ(ex.record.injected[0], "key");
  EXPECT_EQ(ex.record.decision(), "allow");
}

TEST_F(pipeline_test, EachControlRefusesWithItsOwnReason) {
  load(kRules);
  {
    auto& ex = request(http::verb::get, "nowhere.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::host_denied);
  }
  {
    auto& ex = request(http::verb::delete_, "api.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::method_denied);
  }
  {
    // A placeholder sent to a host its secret is not bound to wins over everything.
    auto& ex = request(http::verb::get, "other.example.com", std::string("/?k=") + kPlaceholder);
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::placeholder_refused);
    EXPECT_EQ(ex.record.detail.find(kToken), std::string::npos);
  }
  {
    // On the secret's own host, but inside a field no credential goes in (a webhook URL the
    // host would call): refused before any other control, nothing swapped.
    auto& ex = request(http::verb::post, "api.example.com",
                       std::string("/hooks?url=http%3A%2F%2Fb.example%2F%3Fk%3D") + kPlaceholder);
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::placeholder_misplaced);
    EXPECT_NE(ex.record.detail.find("secret key"), std::string::npos) << ex.record.detail;
    EXPECT_NE(ex.record.detail.find("query parameter url"), std::string::npos) << ex.record.detail;
    EXPECT_EQ(ex.record.detail.find(kPlaceholder), std::string::npos);
    EXPECT_EQ(ex.path_and_query.find(kToken), std::string::npos);
  }
  {
    auto& ex = request(http::verb::post, "api.example.com", "/");
    ex.has_body = true;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    EXPECT_TRUE(c.request_body(R"({"model":"huge"})", true).refused());
    EXPECT_EQ(ex.record.reason, core::errc::body_denied);
    // Refused before forwarding: nothing was injected.
    EXPECT_TRUE(ex.record.injected.empty());
    EXPECT_TRUE(req_[http::field::authorization].empty());
  }
}

TEST_F(pipeline_test, APlaceholderIsSwappedWhereACredentialGoes) {
  load(kRules);
  auto& ex = request(http::verb::get, "api.example.com", "/v1?page=2");
  req_.set("X-Api-Key", kPlaceholder);
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes()) << ex.record.detail;
  ASSERT_TRUE(c.forward().passes()) << ex.record.detail;
  EXPECT_EQ(req_["X-Api-Key"], kToken);
  EXPECT_EQ(ex.path_and_query, "/v1?page=2");
}

TEST_F(pipeline_test, ARequestInAProtocolTheRuleDoesNotListIsRefused) {
  load(std::string(kRules) + "    protocols: [h2]\n");  // the rule `other`
  {
    auto& ex = request(http::verb::get, "other.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::protocol_denied);
    EXPECT_EQ(ex.record.detail, "rule other does not allow http/1.1");
  }
  {
    auto& ex = request(http::verb::get, "other.example.com", "/");
    ex.record.protocol = "h2";
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes()) << ex.record.detail;
  }
}

TEST_F(pipeline_test, RateLimitsRefuseWithRetryAfterOnceTheBurstIsSpent) {
  load(kRules);
  for (int i = 0; i < 2; ++i) {
    auto& ex = request(http::verb::get, "api.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes()) << i << ": " << ex.record.detail;
  }
  auto& ex = request(http::verb::get, "api.example.com", "/");
  chain c(pipeline_->factories(), ex);
  EXPECT_TRUE(c.request_head().refused());
  EXPECT_EQ(ex.record.reason, core::errc::rate_limited);
  EXPECT_GE(ex.record.retry_after, 1u);
  EXPECT_NE(ex.record.detail.find("requests_per_second"), std::string::npos);
}

TEST_F(pipeline_test, AConcurrentSlotGoesBackWhenTheAnswerIsWholeBeforeTheExchangeEnds) {
  load(kRules, ", rate: {concurrent: 1}");
  auto& first = request(http::verb::get, "other.example.com", "/");
  const auto first_owned = std::move(ex_);
  chain held(pipeline_->factories(), first);
  ASSERT_TRUE(held.request_head().passes()) << first.record.detail;
  {
    auto& ex = request(http::verb::get, "other.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::concurrency_limited);
  }
  // The origin's answer read whole: its last bytes are still to be written, the exchange and
  // its chain live on, the slot is free.
  held.answered();
  auto& ex = request(http::verb::get, "other.example.com", "/");
  chain c(pipeline_->factories(), ex);
  EXPECT_TRUE(c.request_head().passes()) << ex.record.detail;
}

TEST_F(pipeline_test, ReportModeIsAppliedOnceForTheDecisionAndTheChecks) {
  load(kRules);
  auto& ex = request(http::verb::get, "report.example.com", "/elsewhere?x=1");
  chain c(pipeline_->factories(), ex);
  // The path refusal and the query refusal are both recorded, neither enforced.
  EXPECT_TRUE(c.request_head().passes());
  EXPECT_EQ(ex.record.decision(), "report");
  EXPECT_EQ(ex.record.reason, core::errc::query_denied);
}

TEST_F(pipeline_test, RedactionRewritesABodyWhoseSecretIsSplitAcrossPieces) {
  load(kRules);
  auto& ex = request(http::verb::get, "api.example.com", "/");
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes());
  ASSERT_TRUE(c.forward().passes());
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::content_length, "100");
  res.set("X-Echo", kToken);
  ex.response = &res;
  ASSERT_TRUE(c.response_head().passes());
  EXPECT_TRUE(ex.response_reframed);
  EXPECT_EQ(res.count(http::field::content_length), 0u);
  EXPECT_EQ(std::string(res["X-Echo"]).find(kToken), std::string::npos);
  const std::string body = std::string(R"({"echo":")") + kToken + R"("})";
  std::string out;
  bool enough = false;
  const std::size_t split = body.find(kToken) + 7;
  ASSERT_TRUE(
      c.response_body(std::string_view(body).substr(0, split), false, out, enough).passes());
  ASSERT_TRUE(c.response_body(std::string_view(body).substr(split), false, out, enough).passes());
  ASSERT_TRUE(c.response_body({}, true, out, enough).passes());
  EXPECT_EQ(out.find(kToken), std::string::npos) << out;
  EXPECT_NE(out.find("\"echo\""), std::string::npos) << out;
  c.end();
  ASSERT_FALSE(ex.record.redactions.empty());
}

TEST_F(pipeline_test, ACodingRedactionCannotReadFailsClosed) {
  load(kRules);
  auto& ex = request(http::verb::get, "api.example.com", "/");
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes());
  ASSERT_TRUE(c.forward().passes());
  // The client's Accept-Encoding was narrowed to what the proxy decodes.
  EXPECT_EQ(req_[http::field::accept_encoding], "identity");
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain");
  res.set(http::field::content_encoding, "br");
  ex.response = &res;
  EXPECT_TRUE(c.response_head().failed());
  EXPECT_EQ(ex.record.reason, core::errc::unredactable_response);
  EXPECT_EQ(ex.record.decision(), "error");
}

TEST_F(pipeline_test, RefusalsCountTowardsTheBreakerWhenTheExchangeEnds) {
  load(kRules, ", breaker: {max_failures: 1, window: 1m, cooldown: 5m}");
  bool tripped = false;
  for (int i = 0; i < 2; ++i) {
    auto& ex = request(http::verb::get, "nowhere.example.com", "/");
    {
      chain c(pipeline_->factories(), ex);
      EXPECT_TRUE(c.request_head().refused());
    }
    tripped = ex.breaker_tripped;
    EXPECT_EQ(tripped, i == 1) << i;
  }
  ASSERT_TRUE(tripped);
  // Suspended now: even an allowed request is refused, and that refusal is not counted again.
  auto& ex = request(http::verb::get, "other.example.com", "/");
  {
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
  }
  EXPECT_EQ(ex.record.reason, core::errc::agent_suspended);
  EXPECT_FALSE(ex.breaker_tripped);
  // So is one no rule allows, with the same reason: a suspended agent's refusals do not sort
  // hosts into allowed and not (the agent gate runs before the decision).
  auto& denied = request(http::verb::get, "nowhere.example.com", "/");
  {
    chain c(pipeline_->factories(), denied);
    EXPECT_TRUE(c.request_head().refused());
  }
  EXPECT_EQ(denied.record.reason, core::errc::agent_suspended);
  EXPECT_FALSE(denied.breaker_tripped);
}

TEST_F(pipeline_test, AStoppedAgentGetsOneAnswerForEveryHost) {
  load(kRules);
  ASSERT_TRUE(rates_.stop("default"));
  for (const char* host : {"other.example.com", "nowhere.example.com"}) {
    auto& ex = request(http::verb::get, host, "/");
    {
      chain c(pipeline_->factories(), ex);
      EXPECT_TRUE(c.request_head().refused());
    }
    EXPECT_EQ(ex.record.reason, core::errc::agent_stopped) << host;
    EXPECT_TRUE(ex.record.rule.empty()) << host;  // refused before any rule was looked at
  }
}

}  // namespace
}  // namespace airlock::filters

namespace airlock::filters {
namespace {

// Trailers (chain::trailers): a request's pass the placeholder guard as its head does; a
// response's are redacted as its head is.
TEST_F(pipeline_test, TrailersArePolicedAndRedactedAsHeads) {
  load(kRules);
  {
    auto& ex = request(http::verb::post, "other.example.com", "/");
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes()) << ex.record.detail;
    http::fields clean;
    clean.insert("x-checksum", "abc");
    EXPECT_TRUE(c.trailers(clean, false).passes());
    http::fields leaking;
    leaking.insert("x-token", std::string("Bearer ") + kPlaceholder);
    EXPECT_TRUE(c.trailers(leaking, false).refused());
    EXPECT_EQ(ex.record.reason, core::errc::placeholder_refused);
  }
  auto& ex = request(http::verb::get, "api.example.com", "/");
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes());
  ASSERT_TRUE(c.forward().passes());
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/grpc");
  ex.response = &res;
  ex.response_has_body = false;
  ASSERT_TRUE(c.response_head().passes());
  http::fields trailers;
  trailers.insert("grpc-status", "0");
  trailers.insert("grpc-message", std::string("echo ") + kToken);
  ASSERT_TRUE(c.trailers(trailers, true).passes());
  EXPECT_EQ(std::string(trailers["grpc-message"]).find(kToken), std::string::npos);
  EXPECT_EQ(trailers["grpc-status"], "0");
  EXPECT_FALSE(ex.record.redactions.empty());
}

}  // namespace
}  // namespace airlock::filters
