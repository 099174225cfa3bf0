// Port ranges (`ports: [443, 8000-8999]`) and per-rule schemes (`schemes: [http]`): reading,
// loader errors with file:line:column:key, decide(), explain and the compact printing.

#include "policy/ports.hpp"
#include "policy/explain.hpp"
#include "policy/snapshot.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using core::errc;
using test::must_load;
using T = test::target_builder;

std::vector<load_error> errors_of(std::string_view yaml) {
  return load_string(yaml, "p.yaml").errors;
}

std::string dump(const std::vector<load_error>& errors) {
  std::string s;
  for (const auto& e : errors)
    s += e.to_string() + "\n";
  return s;
}

TEST(PortRange, Parse) {
  std::string why;
  EXPECT_EQ(parse_port_range("443", why), (model::port_range{443, 443}));
  EXPECT_EQ(parse_port_range("8000-8999", why), (model::port_range{8000, 8999}));
  EXPECT_EQ(parse_port_range("1-65535", why), (model::port_range{1, 65535}));
  EXPECT_EQ(parse_port_range("7-7", why), (model::port_range{7, 7}));
  for (std::string_view bad : {"", "-", "8000-", "-8000", "80 - 90", "+80", "0x50", "80-90-100",
                               "https", " 80", "8000..8999"}) {
    why.clear();
    EXPECT_FALSE(parse_port_range(bad, why)) << bad;
    EXPECT_NE(why.find("expected a port or a range"), std::string::npos) << bad << ": " << why;
  }
  EXPECT_FALSE(parse_port_range("0-10", why));
  EXPECT_EQ(why, "must be between 1 and 65535");
  EXPECT_FALSE(parse_port_range("60000-70000", why));
  EXPECT_EQ(why, "must be between 1 and 65535");
  EXPECT_FALSE(parse_port_range("080", why));
  EXPECT_EQ(why, "write ports without leading zeros");
  EXPECT_FALSE(parse_port_range("9000-8000", why));
  EXPECT_EQ(why, "range 9000-8000 ends before it starts (write 8000-9000)");
}

TEST(PortRange, MergeAndPrintCompactly) {
  const auto m =
      merge_port_ranges({{8000, 8999}, {443, 443}, {80, 80}, {9000, 9100}, {8500, 8600}, {81, 81}});
  EXPECT_EQ(m, (std::vector<model::port_range>{{80, 81}, {443, 443}, {8000, 9100}}));
  EXPECT_EQ(ports_text(m), "80-81, 443, 8000-9100");
  EXPECT_EQ(ports_text(m, 2), "80-81, 443 and 1 more");
  EXPECT_TRUE(contains_port(m, 80));
  EXPECT_TRUE(contains_port(m, 81));
  EXPECT_FALSE(contains_port(m, 82));
  EXPECT_TRUE(contains_port(m, 8000));
  EXPECT_TRUE(contains_port(m, 9100));
  EXPECT_FALSE(contains_port(m, 9101));
  EXPECT_FALSE(contains_port(m, 1));
  EXPECT_FALSE(contains_port({}, 80));
}

TEST(PortRange, LoaderErrorsNameFileLineAndKey) {
  const std::string head = "rules:\n  - name: r\n    hosts: [a.example]\n";
  auto errors = errors_of(head + "    ports: [443, 9000-8000]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].to_string(),
            "p.yaml:4:18: rules[0].ports[1]: range 9000-8000 ends before it starts (write "
            "8000-9000)");
  errors = errors_of(head + "    ports: [8000-70000]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].to_string(), "p.yaml:4:13: rules[0].ports[0]: must be between 1 and 65535");
  errors = errors_of(head + "    ports: [80, '8000 - 8999']\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].ports[1]");
  EXPECT_EQ(errors[0].line, 4);
  errors = errors_of(head + "    ports: [[80, 81]]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].ports[0]");
}

class Ranges : public ::testing::Test {
 protected:
  void SetUp() override {
    policy_ = must_load(R"(agents: {default: {rules: [svc, web]}}
rules:
  - {name: svc, hosts: [svc.example], ports: [443, 8000-8999, 30000-32767]}
  - {name: web, hosts: [web.example], ports: [8080], schemes: [http]}
)");
    ASSERT_TRUE(policy_);
    agent_ = policy_->find_agent("default");
  }
  decision decide(const T& t) const { return policy_->decide(*agent_, t.t); }
  std::shared_ptr<const snapshot> policy_;
  const compiled_agent* agent_ = nullptr;
};

TEST_F(Ranges, InsideAllowedOutsideRefusedWithACompactList) {
  EXPECT_EQ(decide(T("svc.example", 8000)).reason, errc::ok);
  EXPECT_EQ(decide(T("svc.example", 8999)).reason, errc::ok);
  EXPECT_EQ(decide(T("svc.example", 31000)).reason, errc::ok);
  EXPECT_EQ(decide(T::connect("svc.example", 8443)).reason, errc::ok);
  const auto d = decide(T("svc.example", 9000));
  EXPECT_EQ(d.reason, errc::port_denied);
  EXPECT_EQ(d.detail, "rule svc: port 9000 not allowed (443, 8000-8999, 30000-32767)");
  EXPECT_EQ(decide(T("svc.example", 7999)).reason, errc::port_denied);
  EXPECT_EQ(decide(T("svc.example", 80)).reason, errc::port_denied);
}

TEST_F(Ranges, ExplainPrintsRanges) {
  explain_request q;
  q.method = "GET";
  q.url = "http://svc.example:9000/";
  const auto e = explain(*policy_, q);
  EXPECT_FALSE(e.allowed);
  EXPECT_NE(e.text.find("port 9000 is not in [443, 8000-8999, 30000-32767]"), std::string::npos)
      << e.text;
}

TEST(Ranges28232, AWholeEphemeralRangeIsOneEntry) {
  auto p = must_load(
      "agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [h.example], "
      "ports: [32768-60999]}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rules()[0].ports.size(), 1u);
  const auto d = p->decide(*p->find_agent("default"), T("h.example", 61000).t);
  EXPECT_EQ(d.detail, "rule r: port 61000 not allowed (32768-60999)");
}

class Schemes : public ::testing::Test {
 protected:
  void load(std::string_view yaml) {
    policy_ = must_load(yaml);
    ASSERT_TRUE(policy_);
    agent_ = policy_->find_agent("default");
  }
  decision decide(const T& t) const { return policy_->decide(*agent_, t.t); }
  std::shared_ptr<const snapshot> policy_;
  const compiled_agent* agent_ = nullptr;
};

TEST_F(Schemes, ConnectOnlyRuleRefusesPlainHttp) {
  load(R"(agents: {default: {rules: [tls]}}
rules:
  - {name: tls, hosts: [h.example], ports: [18443], schemes: [https]}
)");
  EXPECT_EQ(decide(T::connect("h.example", 18443)).reason, errc::ok);
  const auto d = decide(T("h.example", 18443));
  EXPECT_EQ(d.reason, errc::scheme_denied);
  EXPECT_EQ(d.detail, "rule tls allows only CONNECT (https), not plain http");
  EXPECT_FALSE(d.allowed());
  // A request inside an inspected tunnel says so.
  T inner("h.example", 18443);
  inner.t.scheme = model::scheme::https;
  EXPECT_EQ(decide(inner).reason, errc::ok);
  // The port is checked first: another port is a port refusal.
  EXPECT_EQ(decide(T("h.example", 80)).reason, errc::port_denied);
}

TEST_F(Schemes, PlainOnlyRuleRefusesConnect) {
  load(R"(agents: {default: {rules: [plain]}}
rules:
  - {name: plain, hosts: [h.example], ports: [18080], schemes: [http]}
)");
  EXPECT_EQ(decide(T("h.example", 18080)).reason, errc::ok);
  const auto d = decide(T::connect("h.example", 18080));
  EXPECT_EQ(d.reason, errc::scheme_denied);
  EXPECT_EQ(d.detail, "rule plain allows only plain http, not CONNECT");
  // Plain HTTP a client sends inside a tunnel is http.
  T inner = T::connect("h.example", 18080);
  inner.t.is_connect = false;
  inner.t.method = "GET";
  inner.t.scheme = model::scheme::http;
  EXPECT_EQ(decide(inner).reason, errc::ok);
}

TEST_F(Schemes, TwoRulesPerSchemeForOneHostAndPort) {
  load(R"(agents: {default: {rules: [plain, tls]}}
rules:
  - {name: plain, hosts: [h.example], ports: [8080], schemes: [http], methods: [GET]}
  - {name: tls, hosts: [h.example], ports: [8080], schemes: [https]}
)");
  EXPECT_EQ(decide(T("h.example", 8080)).rule->name, "plain");
  EXPECT_EQ(decide(T("h.example", 8080, "POST")).reason, errc::method_denied);
  const auto c = decide(T::connect("h.example", 8080));
  EXPECT_EQ(c.reason, errc::ok);
  EXPECT_EQ(c.rule->name, "tls");
}

TEST_F(Schemes, DefaultIsBoth) {
  load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [h.example]}\n");
  EXPECT_EQ(decide(T("h.example", 443)).reason, errc::ok);
  EXPECT_EQ(decide(T::connect("h.example", 80)).reason, errc::ok);
}

TEST_F(Schemes, HttpOnlyRuleWithChecksOnPort443NeedsNoInspection) {
  // Without https the rule never sees a tunnel, so checks on port 443 are fine.
  load(R"(agents: {default: {rules: [r]}}
rules:
  - {name: r, hosts: [h.example], ports: [443], schemes: [http], methods: [GET]}
)");
  EXPECT_EQ(decide(T("h.example", 443)).reason, errc::ok);
}

TEST_F(Schemes, ExplainSaysWhy) {
  load(R"(agents: {default: {rules: [tls]}}
rules:
  - {name: tls, hosts: [h.example], ports: [18443], schemes: [https]}
)");
  explain_request q;
  q.method = "GET";
  q.url = "http://h.example:18443/";
  auto e = explain(*policy_, q);
  EXPECT_FALSE(e.allowed);
  EXPECT_NE(e.text.find("plain http is not in schemes [https]"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("decision: denied: scheme_denied"), std::string::npos) << e.text;
  q.url = "https://h.example:18443/";
  e = explain(*policy_, q);
  EXPECT_TRUE(e.allowed) << e.text;
}

TEST(SchemesErrors, LoaderValidation) {
  const std::string head = "rules:\n  - name: r\n    hosts: [a.example]\n";
  auto errors = errors_of(head + "    schemes: [http, ftp]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].to_string(),
            "p.yaml:4:21: rules[0].schemes[1]: unknown scheme 'ftp' (http: plain requests; "
            "https: CONNECT tunnels)");
  errors = errors_of(head + "    schemes: [https, https]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].schemes[1]");
  EXPECT_NE(errors[0].message.find("listed twice"), std::string::npos);
  errors = errors_of(head + "    schemes: []\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].schemes");
  errors = errors_of(head + "    schemes: HTTP\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].schemes");
  errors = errors_of(head + "    schemes: [HTTP]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  errors = errors_of(head + "    methods: [CONNECT]\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_NE(errors[0].message.find("schemes: [https]"), std::string::npos) << dump(errors);
}

}  // namespace
}  // namespace airlock::policy
