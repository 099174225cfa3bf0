#include "policy/snapshot.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using core::errc;
using test::must_load;
using T = test::target_builder;

class Decide : public ::testing::Test {
 protected:
  void load(std::string_view yaml) {
    policy_ = must_load(yaml);
    ASSERT_TRUE(policy_);
    agent_ = policy_->find_agent("default");
    ASSERT_NE(agent_, nullptr);
  }
  decision decide(const T& t) const {
    if (agent_ == nullptr) return {};  // load() already failed the test
    return policy_->decide(*agent_, t.t);
  }
  errc reason(const T& t) const { return decide(t).reason; }

  std::shared_ptr<const snapshot> policy_;
  const compiled_agent* agent_ = nullptr;
};

TEST_F(Decide, ExactHosts) {
  load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [api.github.com]}\n");
  EXPECT_EQ(reason(T("api.github.com", 443)), errc::ok);
  EXPECT_EQ(reason(T("API.GitHub.com.", 443)), errc::ok);  // normalised by the caller
  EXPECT_EQ(reason(T("github.com", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("x.api.github.com", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("api.github.com.evil.example", 443)), errc::host_denied);
  const auto d = decide(T("api.github.com", 443));
  ASSERT_NE(d.rule, nullptr);
  EXPECT_EQ(d.rule->name, "r");
  EXPECT_TRUE(d.detail.empty());
  EXPECT_TRUE(d.allowed());
  EXPECT_FALSE(d.report_only);
}

TEST_F(Decide, SuffixWildcard) {
  load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: ['*.example.com']}\n");
  EXPECT_EQ(reason(T("a.example.com", 443)), errc::ok);
  EXPECT_EQ(reason(T("a.b.example.com", 80)), errc::ok);
  EXPECT_EQ(reason(T("example.com", 443)), errc::host_denied);  // not the bare suffix
  EXPECT_EQ(reason(T("evilexample.com", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("example.com.evil.org", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("aexample.com", 443)), errc::host_denied);
}

TEST_F(Decide, RegexIsAFullMatch) {
  load(R"(agents: {default: {rules: [r]}}
rules:
  - {name: r, host_regex: ['[a-z0-9-]+\.example\.com', 'cdn[0-9]\.example\.net']}
)");
  EXPECT_EQ(reason(T("api.example.com", 443)), errc::ok);
  EXPECT_EQ(reason(T("cdn7.example.net", 443)), errc::ok);
  // Unanchored patterns are still anchored at both ends.
  EXPECT_EQ(reason(T("a.b.example.com", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("api.example.com.evil.org", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("xcdn7.example.net", 443)), errc::host_denied);
  EXPECT_EQ(reason(T("example.com", 443)), errc::host_denied);
}

TEST_F(Decide, RegexIgnoresCaseLikeDns) {
  load(R"(agents: {default: {rules: [r]}}
rules:
  - {name: r, host_regex: ['API\.Example\.com'], ports: [80], paths: ['/Repos/.*']}
)");
  EXPECT_EQ(reason(T("api.example.com", 80, "GET", "/Repos/x")), errc::ok);
  // Paths are case-sensitive.
  EXPECT_EQ(reason(T("api.example.com", 80, "GET", "/repos/x")), errc::path_denied);
}

TEST_F(Decide, IpLiterals) {
  load(R"(agents: {default: {rules: [ip, names]}}
rules:
  - {name: ip, hosts: ['10.0.0.1', '[2001:db8::1]']}
  - {name: names, hosts: ['*.example', '*.in-addr.arpa'], host_regex: ['.*']}
)");
  EXPECT_EQ(reason(T("10.0.0.1", 80)), errc::ok);
  // Other spellings of the same address normalise to it.
  EXPECT_EQ(reason(T("10.1", 80)), errc::ok);
  EXPECT_EQ(reason(T("0x0a000001", 80)), errc::ok);
  EXPECT_EQ(reason(T("[2001:DB8:0::1]", 443)), errc::ok);
  // Wildcards and regexes never match an address, even ".*".
  EXPECT_EQ(reason(T("10.0.0.2", 80)), errc::host_denied);
  EXPECT_EQ(reason(T("127.0.0.1", 80)), errc::host_denied);
  EXPECT_EQ(reason(T("[::1]", 80)), errc::host_denied);
  EXPECT_EQ(reason(T("anything.example", 80)), errc::ok);
}

TEST_F(Decide, Ports) {
  load(R"(agents: {default: {rules: [a, b]}}
rules:
  - {name: a, hosts: [a.example]}
  - {name: b, hosts: [b.example], ports: [8443]}
)");
  EXPECT_EQ(reason(T("a.example", 80)), errc::ok);
  EXPECT_EQ(reason(T("a.example", 443)), errc::ok);
  const auto d = decide(T("a.example", 22));
  EXPECT_EQ(d.reason, errc::port_denied);
  ASSERT_NE(d.rule, nullptr);
  EXPECT_EQ(d.rule->name, "a");
  EXPECT_EQ(d.detail, "rule a: port 22 not allowed (80, 443)");
  EXPECT_FALSE(d.allowed());
  EXPECT_EQ(reason(T("b.example", 8443)), errc::ok);
  EXPECT_EQ(reason(T("b.example", 443)), errc::port_denied);
}

TEST_F(Decide, MethodsAndPaths) {
  load(R"(agents: {default: {rules: [gh]}}
rules:
  - name: gh
    hosts: [api.github.com]
    ports: [80]
    methods: [GET, POST]
    paths: ['/repos/[^/]+/[^/]+(/.*)?', '/user']
)");
  EXPECT_EQ(reason(T("api.github.com", 80, "GET", "/repos/a/b")), errc::ok);
  EXPECT_EQ(reason(T("api.github.com", 80, "POST", "/repos/a/b/issues")), errc::ok);
  EXPECT_EQ(reason(T("api.github.com", 80, "GET", "/user")), errc::ok);
  EXPECT_EQ(reason(T("api.github.com", 80, "GET", "/users")), errc::path_denied);
  EXPECT_EQ(reason(T("api.github.com", 80, "GET", "/x/repos/a/b")), errc::path_denied);
  EXPECT_EQ(reason(T("api.github.com", 80, "GET", "")), errc::path_denied);
  auto d = decide(T("api.github.com", 80, "DELETE", "/repos/a/b"));
  EXPECT_EQ(d.reason, errc::method_denied);
  EXPECT_EQ(d.detail, "rule gh: method DELETE not allowed");
  // Methods are case-sensitive on the wire (RFC 9110 section 9.1).
  EXPECT_EQ(reason(T("api.github.com", 80, "get", "/repos/a/b")), errc::method_denied);
  d = decide(T("api.github.com", 80, "GET", "/admin"));
  EXPECT_EQ(d.reason, errc::path_denied);
  EXPECT_EQ(d.detail, "rule gh: path not allowed");
}

TEST_F(Decide, DotSegmentsNeverSatisfyPaths) {
  load(R"(agents: {default: {rules: [r]}}
rules:
  - {name: r, hosts: [a.example], ports: [80], paths: ['/repos/.*']}
)");
  EXPECT_EQ(reason(T("a.example", 80, "GET", "/repos/x")), errc::ok);
  EXPECT_EQ(reason(T("a.example", 80, "GET", "/repos/x..y/.z")), errc::ok);
  EXPECT_EQ(reason(T("a.example", 80, "GET", "/repos/group%2Fproject/x;v=1")), errc::ok);
  // Also behind a separator a server decodes (or reads as one), and before parameters a
  // servlet container drops.
  for (std::string_view p :
       {"/repos/../admin", "/repos/./x", "/repos/x/..", "/repos/%2e%2E/a", "/repos/.%2e/a",
        "/repos/%2E/a", "/repos/..%2fadmin", "/repos/..%2Fadmin", "/repos/%5c..%5Cadmin",
        "/repos/x\\..\\admin", "/repos/..;/admin", "/repos/.%2e;x=1/admin"}) {
    const auto d = decide(T("a.example", 80, "GET", p));
    EXPECT_EQ(d.reason, errc::path_denied) << p;
    EXPECT_EQ(d.detail, "rule r: path has dot segments") << p;
  }
}

TEST_F(Decide, PathsDoNotConstrainRulesWithoutThem) {
  load("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: [a.example]}\n");
  EXPECT_EQ(reason(T("a.example", 80, "DELETE", "/../anything")), errc::ok);
}

TEST_F(Decide, Upgrades) {
  load(R"(agents: {default: {rules: [ws, plain]}}
rules:
  - {name: ws, hosts: [ws.example], upgrades: [websocket]}
  - {name: plain, hosts: [plain.example]}
)");
  EXPECT_EQ(reason(T("ws.example", 80, "GET", "/", "websocket")), errc::ok);
  EXPECT_EQ(reason(T("ws.example", 80, "GET", "/")), errc::ok);
  auto d = decide(T("ws.example", 80, "GET", "/", "h2c"));
  EXPECT_EQ(d.reason, errc::upgrade_denied);
  EXPECT_EQ(d.detail, "rule ws: upgrade to h2c not allowed");
  d = decide(T("plain.example", 80, "GET", "/", "websocket"));
  EXPECT_EQ(d.reason, errc::upgrade_denied);
  // Client text that is not a short token is not reflected into the detail.
  d = decide(T("plain.example", 80, "GET", "/", "x\r\ny: z"));
  EXPECT_EQ(d.detail, "rule plain: upgrade not allowed");
}

TEST_F(Decide, ConnectVersusInspect) {
  policy_ = nullptr;
  const std::string dir = std::string(AIRLOCK_POLICY_DATA_DIR);
  auto r = load_string(R"(tls: {ca_cert: tls/ca.crt, ca_key: tls/ca.key}
agents: {default: {rules: [opaque, checked, inspected]}}
rules:
  - {name: opaque, hosts: [opaque.example], ports: [443]}
  - {name: checked, hosts: [checked.example], ports: [8443], methods: [GET]}
  - {name: inspected, hosts: [inspected.example], ports: [443], paths: ['/ok'], inspect: true}
)",
                       dir + "/policy.yaml");
  ASSERT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].to_string());
  policy_ = r.policy;
  agent_ = policy_->find_agent("default");

  EXPECT_EQ(reason(T::connect("opaque.example", 443)), errc::ok);
  // A port other than 443 may carry plain HTTP, so the rule loads; a tunnel to it is refused.
  const auto d = decide(T::connect("checked.example", 8443));
  EXPECT_EQ(d.reason, errc::needs_inspection);
  EXPECT_EQ(d.detail, "rule checked checks methods/paths; set inspect: true");
  // Plain HTTP to the same rule is checked request by request.
  EXPECT_EQ(reason(T("checked.example", 8443, "GET", "/")), errc::ok);
  EXPECT_EQ(reason(T("checked.example", 8443, "PUT", "/")), errc::method_denied);
  // An inspecting rule allows the tunnel on host and port; the inner requests are checked later.
  EXPECT_EQ(reason(T::connect("inspected.example", 443)), errc::ok);
  EXPECT_EQ(reason(T::connect("inspected.example", 8443)), errc::port_denied);
  EXPECT_EQ(reason(T("inspected.example", 443, "GET", "/ok")), errc::ok);
  EXPECT_EQ(reason(T("inspected.example", 443, "GET", "/no")), errc::path_denied);
}

TEST(DecideLoad, RequestChecksOnPort443NeedInspect) {
  // The loader refuses what an opaque HTTPS tunnel could never check.
  for (const char* rule : {"{name: r, hosts: [a.example], methods: [GET]}",
                           "{name: r, hosts: [a.example], ports: [443], paths: ['/x']}",
                           "{name: r, hosts: [a.example], query: {params: {q: ''}}}",
                           "{name: r, hosts: [a.example], headers: {forbidden: [Cookie]}}",
                           "{name: r, hosts: [a.example], body: {max_bytes: 1KiB}}"}) {
    auto r = load_string(std::string("agents: {default: {rules: [r]}}\nrules:\n  - ") + rule + "\n",
                         "p.yaml");
    ASSERT_FALSE(r.ok()) << rule;
    ASSERT_EQ(r.errors.size(), 1u) << rule;
    EXPECT_NE(r.errors[0].message.find("port 443 hides"), std::string::npos)
        << r.errors[0].to_string();
  }
  EXPECT_TRUE(load_string("agents: {default: {rules: [r]}}\nrules:\n  - {name: r, hosts: "
                          "[a.example], ports: [80], methods: [GET]}\n",
                          "p.yaml")
                  .ok());
}

TEST_F(Decide, FirstAllowingRuleWins) {
  load(R"(agents: {default: {rules: [narrow, wide]}}
rules:
  - {name: narrow, hosts: [a.example], ports: [80], methods: [GET]}
  - {name: wide, hosts: ['*.example', a.example]}
)");
  EXPECT_EQ(decide(T("a.example", 80, "GET")).rule->name, "narrow");
  EXPECT_EQ(decide(T("a.example", 80, "POST")).rule->name, "wide");
  EXPECT_EQ(decide(T("a.example", 80, "POST")).reason, errc::ok);
}

TEST_F(Decide, MostSpecificRefusal) {
  // Each rule names the host and fails a different check; the refusal that got furthest wins,
  // whatever the order of the rules.
  load(R"(agents: {default: {rules: [port, upgrade, method, path]}}
rules:
  - {name: port, hosts: [a.example], ports: [1]}
  - {name: upgrade, hosts: [a.example], ports: [80]}
  - {name: method, hosts: [a.example], ports: [80], upgrades: [websocket], methods: [PUT]}
  - name: path
    hosts: [a.example]
    ports: [80]
    upgrades: [websocket]
    methods: [GET]
    paths: ['/only']
)");
  auto d = decide(T("a.example", 80, "GET", "/x", "websocket"));
  EXPECT_EQ(d.reason, errc::path_denied);
  EXPECT_EQ(d.rule->name, "path");
  d = decide(T("a.example", 80, "POST", "/x", "websocket"));
  EXPECT_EQ(d.reason, errc::method_denied);
  EXPECT_EQ(d.rule->name, "method");
  d = decide(T("a.example", 80, "POST", "/x", "h2c"));
  EXPECT_EQ(d.reason, errc::upgrade_denied);
  EXPECT_EQ(d.rule->name, "upgrade");
  d = decide(T("a.example", 22, "GET", "/only", "websocket"));
  EXPECT_EQ(d.reason, errc::port_denied);
  EXPECT_EQ(d.rule->name, "port");  // the first of equally specific refusals
}

TEST_F(Decide, NeedsInspectionBeatsPort) {
  load(R"(agents: {default: {rules: [p, m]}}
rules:
  - {name: p, hosts: [a.example], ports: [9443]}
  - {name: m, hosts: [a.example], ports: [8443], methods: [GET]}
)");
  const auto d = decide(T::connect("a.example", 8443));
  EXPECT_EQ(d.reason, errc::needs_inspection);
  EXPECT_EQ(d.rule->name, "m");
}

TEST_F(Decide, HostDenied) {
  load(R"(agents:
  default: {rules: [r]}
  coder: {rules: []}
rules:
  - {name: r, hosts: [a.example]}
)");
  auto d = decide(T("evil.example", 443));
  EXPECT_EQ(d.reason, errc::host_denied);
  EXPECT_EQ(d.rule, nullptr);
  EXPECT_EQ(d.detail, "no rule of agent default allows host evil.example");
  EXPECT_FALSE(d.report_only);
  const auto* coder = policy_->find_agent("coder");
  d = policy_->decide(*coder, T("a.example", 443).t);
  EXPECT_EQ(d.reason, errc::host_denied);
  EXPECT_EQ(d.detail, "no rule of agent coder allows host a.example");
  // No host at all: denied, never a crash.
  request_target empty;
  EXPECT_EQ(policy_->decide(*agent_, empty).reason, errc::host_denied);
}

TEST_F(Decide, ReportModeOfThePolicy) {
  load(R"(mode: report
agents: {default: {rules: [r]}}
rules:
  - {name: r, hosts: [a.example], ports: [443]}
)");
  auto d = decide(T("evil.example", 443));
  EXPECT_EQ(d.reason, errc::host_denied);  // the reason stays the deny reason
  EXPECT_TRUE(d.report_only);
  EXPECT_TRUE(d.allowed());
  d = decide(T("a.example", 80));
  EXPECT_EQ(d.reason, errc::port_denied);
  EXPECT_TRUE(d.report_only);
  d = decide(T("a.example", 443));
  EXPECT_EQ(d.reason, errc::ok);
  EXPECT_FALSE(d.report_only);
}

TEST_F(Decide, ReportModeOfTheClosestRule) {
  load(R"(agents: {default: {rules: [enforced, trial]}}
rules:
  - {name: enforced, hosts: [a.example], ports: [443]}
  - {name: trial, hosts: [b.example], ports: [443], mode: report}
)");
  auto d = decide(T("b.example", 80));
  EXPECT_EQ(d.reason, errc::port_denied);
  EXPECT_TRUE(d.report_only);
  d = decide(T("a.example", 80));
  EXPECT_FALSE(d.report_only);
  EXPECT_FALSE(d.allowed());
  // No rule matched the host: the policy's mode (enforce) applies.
  d = decide(T("c.example", 443));
  EXPECT_FALSE(d.report_only);
}

TEST_F(Decide, EnforcedRuleInReportPolicy) {
  load(R"(mode: report
agents: {default: {rules: [r]}}
rules:
  - {name: r, hosts: [a.example], ports: [443], mode: enforce}
)");
  EXPECT_FALSE(decide(T("a.example", 80)).report_only);
  EXPECT_TRUE(decide(T("b.example", 80)).report_only);
}

TEST_F(Decide, GuardIsBuiltFromThePolicy) {
  auto p = must_load("network: {allow_cidrs: ['10.1.0.0/16']}\n");
  ASSERT_TRUE(p);
  using boost::asio::ip::make_address;
  EXPECT_TRUE(p->guard().check(make_address("10.1.2.3"), 443).allowed);
  EXPECT_FALSE(p->guard().check(make_address("10.2.2.3"), 443).allowed);
  EXPECT_FALSE(p->guard().check(make_address("169.254.169.254"), 80).allowed);
  EXPECT_TRUE(p->guard().check(make_address("93.184.216.34"), 443).allowed);

  auto open = must_load("network: {block_private: false}\n");
  ASSERT_TRUE(open);
  EXPECT_TRUE(open->guard().check(make_address("10.2.2.3"), 443).allowed);

  load_options options;
  options.own_endpoints.emplace_back(make_address("127.0.0.1"), 3128);
  auto own = must_load("network: {block_private: false}\n", options);
  ASSERT_TRUE(own);
  EXPECT_FALSE(own->guard().check(make_address("127.0.0.1"), 3128).allowed);
  EXPECT_TRUE(own->guard().check(make_address("127.0.0.1"), 3129).allowed);
}

TEST_F(Decide, SnapshotOutlivesTheLoadResult) {
  std::shared_ptr<const snapshot> keep;
  {
    auto r =
        load_string("agents: {default: {rules: [r]}}\nrules: [{name: r, hosts: [a.b]}]\n", "x");
    ASSERT_TRUE(r.ok());
    keep = r.policy;
  }
  const auto* a = keep->find_agent("default");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(keep->decide(*a, T("a.b", 80).t).reason, errc::ok);
  EXPECT_EQ(a->rules[0]->source->name, "r");
}

}  // namespace
}  // namespace airlock::policy
