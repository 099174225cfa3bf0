#include "filters/credentials/injection.hpp"

#include "filters/credentials/placeholder_scanner.hpp"
#include "filters/credentials/placeholders.hpp"
#include "filters/credentials/query_params.hpp"
#include "policy/loader.hpp"
#include "policy/token.hpp"

#include <boost/beast/http/fields.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

namespace airlock::filters::credentials {
namespace {
namespace http = boost::beast::http;

constexpr const char* kToken = "ghs_REALTOKENVALUE1234567890abcdefABCD";
constexpr const char* kPlaceholder = "ghs_PLACEHOLDER00000000000000000000000";

// A snapshot whose secrets come from the environment of this test process.
std::shared_ptr<const policy::snapshot> load(const std::string& rules) {
  ::setenv("AIRLOCK_TEST_GH", kToken, 1);
  ::setenv("AIRLOCK_TEST_SVC", "svc-secret-42&x=1", 1);
  const std::string yaml = std::string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
secrets:
  gh: {env: AIRLOCK_TEST_GH, placeholder: ')") +
                           kPlaceholder + R"(', hosts: [api.example.com, '*.gh.example']}
  svc: {env: AIRLOCK_TEST_SVC}
agents:
  default: {rules: [r]}
rules:
)" + rules;
  auto r = policy::load_string(yaml, "test.yaml");
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  return r.policy;
}

net::normalized_host host(std::string_view name) {
  auto h = net::normalize_host(name);
  EXPECT_TRUE(h.has_value());
  return *h;
}

TEST(Injection, HeadersReplaceWhatTheAgentSent) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
    inject: {headers: {Authorization: 'Bearer ${secrets.gh}', X-Tool: 'airlock'}}
)");
  ASSERT_TRUE(snap);
  const auto& rule = snap->rules()[0];
  http::fields head;
  head.insert(http::field::authorization, "Bearer agent-own-key");
  head.insert("authorization", "Basic second");
  head.insert("x-tool", "agent");
  head.insert(http::field::accept, "*/*");
  std::string target = "/v1?x=1";
  auto out = apply_injection(rule.inject, snap->secrets(), host("api.example.com"), head, target);
  EXPECT_EQ(out.error, core::errc::ok);
  EXPECT_EQ(head.count(http::field::authorization), 1u);
  EXPECT_EQ(head[http::field::authorization], std::string("Bearer ") + kToken);
  EXPECT_EQ(head.count("X-Tool"), 1u);
  EXPECT_EQ(head["X-Tool"], "airlock");
  EXPECT_EQ(head[http::field::accept], "*/*");
  EXPECT_EQ(target, "/v1?x=1");
}

TEST(Injection, BasicCredentials) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
    inject: {basic: {username: 'x-access-token', password: '${secrets.gh}'}}
)");
  ASSERT_TRUE(snap);
  const auto& rule = snap->rules()[0];
  http::fields head;
  head.insert(http::field::authorization, "Basic YWdlbnQ6b3du");
  std::string target = "/";
  auto out = apply_injection(rule.inject, snap->secrets(), host("api.example.com"), head, target);
  ASSERT_EQ(out.error, core::errc::ok);
  const std::string value(head[http::field::authorization]);
  ASSERT_EQ(value.rfind("Basic ", 0), 0u);
  auto decoded = policy::base64_decode(value.substr(6));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(*decoded, std::string("x-access-token:") + kToken);
  EXPECT_EQ(basic_authorization(rule.inject, snap->secrets()), value);
}

TEST(Injection, QueryParameterReplacesTheAgentsAndLookAlikes) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
    inject: {query: {api_key: '${secrets.svc}'}}
)");
  ASSERT_TRUE(snap);
  http::fields head;
  std::string target = "/q?a=1&api_key=mine&API_KEY=also&api.key=php&api_key[]=arr&b=2";
  auto out = apply_injection(snap->rules()[0].inject, snap->secrets(), host("api.example.com"),
                             head, target);
  ASSERT_EQ(out.error, core::errc::ok);
  // The value is percent-encoded: its '&' and '=' cannot start another parameter.
  EXPECT_EQ(target, "/q?a=1&b=2&api_key=svc-secret-42%26x%3D1");
}

TEST(Injection, BoundSecretIsNotInjectedElsewhere) {
  auto snap = load(R"(
  - name: r
    host_regex: ['.*\.example\.(com|org)']
    ports: [80]
    inject: {headers: {Authorization: 'Bearer ${secrets.gh}'}}
)");
  ASSERT_TRUE(snap);
  http::fields head;
  head.insert(http::field::authorization, "Bearer agent");
  std::string target = "/";
  auto out = apply_injection(snap->rules()[0].inject, snap->secrets(), host("evil.example.org"),
                             head, target);
  EXPECT_EQ(out.error, core::errc::secret_not_bound);
  EXPECT_NE(out.detail.find("gh"), std::string::npos);
  EXPECT_EQ(out.detail.find(kToken), std::string::npos);
  // Nothing was changed.
  EXPECT_EQ(head[http::field::authorization], "Bearer agent");
  out = apply_injection(snap->rules()[0].inject, snap->secrets(), host("api.example.com"), head,
                        target);
  EXPECT_EQ(out.error, core::errc::ok);
}

TEST(Placeholders, FoundInHeadersAndTargetButNotProxyAuthorization) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
)");
  ASSERT_TRUE(snap);
  const auto secrets = snap->secrets();
  EXPECT_TRUE(any_placeholder(secrets));
  http::fields head;
  head.insert(http::field::proxy_authorization, std::string("Bearer ") + kPlaceholder);
  EXPECT_TRUE(find_placeholders(secrets, head, "/x").empty());
  EXPECT_EQ(find_placeholders(secrets, head, std::string("/x?k=") + kPlaceholder).size(), 1u);
  head.insert("X-Key", std::string("token ") + kPlaceholder);
  auto found = find_placeholders(secrets, head, "/x");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(secrets[found[0]].name, "gh");
}

TEST(Placeholders, FoundInHeaderNamesAndTheMethod) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
)");
  ASSERT_TRUE(snap);
  const auto secrets = snap->secrets();
  http::fields head;
  EXPECT_TRUE(find_placeholders(secrets, head, "/x", "GET").empty());
  EXPECT_EQ(find_placeholders(secrets, head, "/x", kPlaceholder).size(), 1u);
  head.insert(kPlaceholder, "");
  EXPECT_EQ(find_placeholders(secrets, head, "/x").size(), 1u);
  head.clear();
  // Even as Proxy-Authorization's value is skipped, no name is.
  head.insert(std::string("X-") + kPlaceholder, "1");
  EXPECT_EQ(find_placeholders(secrets, head, "/x").size(), 1u);
}

// Under the default swap_in ([header, query]): where a credential goes. (Elsewhere, and with
// swap_in: [anywhere], credentials_placement_test.cpp.)
TEST(Placeholders, SwappedWhereCredentialsGo) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
)");
  ASSERT_TRUE(snap);
  const auto secrets = snap->secrets();
  http::fields head;
  head.insert(http::field::authorization, std::string("Bearer ") + kPlaceholder);
  head.insert("X-Key", kPlaceholder);
  head.insert(http::field::accept, "*/*");
  std::string target = std::string("/x?k=") + kPlaceholder;
  auto found = find_placeholders(secrets, head, target);
  swap_placeholders(secrets, found, head, target);
  EXPECT_EQ(head[http::field::authorization], std::string("Bearer ") + kToken);
  EXPECT_EQ(head["X-Key"], kToken);
  EXPECT_EQ(head[http::field::accept], "*/*");
  EXPECT_EQ(target, std::string("/x?k=") + kToken);
  EXPECT_TRUE(find_placeholders(secrets, head, target).empty());
}

TEST(PlaceholderScanner, FindsAPlaceholderAtEverySplitOnlyForUnboundHosts) {
  auto snap = load(R"(
  - name: r
    hosts: [api.example.com]
    ports: [80]
)");
  ASSERT_TRUE(snap);
  const std::string body = std::string("{\"note\": \"x\", \"key\": \"") + kPlaceholder + "\"}";
  EXPECT_FALSE(placeholder_scanner(snap->secrets(), host("api.example.com")).active());
  EXPECT_FALSE(placeholder_scanner(snap->secrets(), host("a.gh.example")).active());
  for (std::size_t a = 0; a <= body.size(); ++a) {
    for (std::size_t b = a; b <= body.size(); b += 3) {
      placeholder_scanner scan(snap->secrets(), host("paste.example.net"));
      ASSERT_TRUE(scan.active());
      std::size_t hit = placeholder_scanner::none;
      for (auto piece : {std::string_view(body).substr(0, a),
                         std::string_view(body).substr(a, b - a), std::string_view(body).substr(b)})
        if (hit == placeholder_scanner::none) hit = scan.scan(piece);
      ASSERT_NE(hit, placeholder_scanner::none) << a << "," << b;
      EXPECT_EQ(snap->secrets()[hit].name, "gh");
    }
  }
  // One byte at a time, and a near miss.
  placeholder_scanner scan(snap->secrets(), host("paste.example.net"));
  std::string near(kPlaceholder);
  near.back() = '#';
  for (char c : near + " " + near)
    EXPECT_EQ(scan.scan(std::string_view(&c, 1)), placeholder_scanner::none);
}

TEST(QueryParams, PercentEncodeKeepsOnlyUnreserved) {
  EXPECT_EQ(percent_encode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(percent_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
}

TEST(QueryParams, RemoveAndAppendKeepOtherParametersAsWritten) {
  std::string t = "/p";
  append_query_param(t, "k", "v");
  EXPECT_EQ(t, "/p?k=v");
  t = "/p?";
  append_query_param(t, "k", "v");
  EXPECT_EQ(t, "/p?k=v");
  t = "/p?k=1";
  remove_query_param(t, "k");
  EXPECT_EQ(t, "/p");
  t = "/p?a=%41&k=1&&b";
  remove_query_param(t, "k");
  EXPECT_EQ(t, "/p?a=%41&b");
  t = "/p?%6B=encoded-name&x=1";
  remove_query_param(t, "k");
  EXPECT_EQ(t, "/p?x=1");
}

}  // namespace
}  // namespace airlock::filters::credentials
