#include "policy/explain.hpp"

#include "policy/loader.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

class Explain : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_string(R"(tls: {ca_cert: tls/ca.crt, ca_key: tls/ca.key}
agents:
  default: {rules: [pypi, mirror]}
  coder: {rules: [gh-api, gh, pypi, local, pinned, trial]}
rules:
  - {name: pypi, hosts: [pypi.org], ports: [443]}
  - {name: mirror, hosts: [deb.debian.org], ports: [80], methods: [GET], paths: ['/debian/.*']}
  - {name: gh-api, hosts: [api.github.com], ports: [443], inspect: true, methods: [GET],
     paths: ['/repos/.*'], upgrades: [websocket]}
  - {name: gh, hosts: ['*.github.com'], ports: [8443], methods: [GET]}
  - {name: local, hosts: ['127.0.0.1', '10.1.2.3'], ports: [8080], allow_cidrs: ['10.1.0.0/16']}
  - {name: pinned, hosts: [internal.example], addresses: [10.9.9.9, 192.168.0.1]}
  - {name: trial, hosts: [trial.example], ports: [443], mode: report}
)",
                         std::string(AIRLOCK_POLICY_DATA_DIR) + "/explain.yaml");
    ASSERT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].to_string());
    policy_ = r.policy;
  }
  explanation run(std::string_view method, std::string_view url, std::string_view agent = "default",
                  std::string_view upgrade = "") {
    explain_request req;
    req.agent = agent;
    req.method = method;
    req.url = url;
    req.upgrade = upgrade;
    return explain(*policy_, req);
  }
  std::shared_ptr<const snapshot> policy_;
};

TEST_F(Explain, HttpsOpaqueTunnelAllowed) {
  const auto e = run("GET", "https://PyPI.org/simple/requests/");
  EXPECT_TRUE(e.allowed);
  EXPECT_FALSE(e.input_error);
  EXPECT_TRUE(has(e.text, "agent:   default (2 rules)")) << e.text;
  EXPECT_TRUE(has(e.text, "target:  pypi.org:443")) << e.text;
  EXPECT_TRUE(has(e.text, "CONNECT pypi.org:443")) << e.text;
  EXPECT_TRUE(has(e.text,
                  "1. rule pypi: host matches 'pypi.org', port 443 ok; allows the "
                  "tunnel (opaque"))
      << e.text;
  EXPECT_TRUE(has(e.text, "2. rule mirror: not considered")) << e.text;
  EXPECT_TRUE(has(e.text, "not checked (the tunnel is opaque)")) << e.text;
  EXPECT_TRUE(has(e.text, "DNS is not resolved here")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: allowed (rule pypi)")) << e.text;
}

TEST_F(Explain, HostDenied) {
  const auto e = run("GET", "https://evil.example/");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "rule pypi: host does not match [pypi.org]")) << e.text;
  EXPECT_TRUE(has(e.text,
                  "decision: denied: host_denied (no rule of agent default allows host "
                  "evil.example)"))
      << e.text;
}

TEST_F(Explain, PlainHttpWithMethodsAndPaths) {
  auto e = run("GET", "http://deb.debian.org/debian/dists/stable/Release?x=1");
  EXPECT_TRUE(e.allowed) << e.text;
  EXPECT_TRUE(has(e.text, "GET /debian/dists/stable/Release (plain HTTP)")) << e.text;
  EXPECT_TRUE(has(e.text, "method GET ok, path /debian/dists/stable/Release ok; allows")) << e.text;
  e = run("POST", "http://deb.debian.org/debian/x");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "method POST is not in [GET]")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: denied: method_denied")) << e.text;
  e = run("GET", "http://deb.debian.org/etc/passwd");
  EXPECT_TRUE(has(e.text, "path /etc/passwd matches none of [/debian/.*]")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: denied: path_denied")) << e.text;
  e = run("GET", "http://deb.debian.org:8080/debian/x");
  EXPECT_TRUE(has(e.text, "port 8080 is not in [80]")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: denied: port_denied")) << e.text;
}

TEST_F(Explain, InspectedTunnelChecksTheInnerRequest) {
  auto e = run("GET", "https://api.github.com/repos/a/b", "coder");
  EXPECT_TRUE(e.allowed) << e.text;
  EXPECT_TRUE(has(e.text, "allows the tunnel and inspects it")) << e.text;
  EXPECT_TRUE(has(e.text,
                  "inner request GET /repos/a/b (rule gh-api inspects the tunnel; ALPN offers h2 "
                  "and http/1.1; the rule's protocols: http/1.1, h2, websocket)"))
      << e.text;
  EXPECT_TRUE(has(e.text, "decision: allowed (rule gh-api)")) << e.text;

  e = run("DELETE", "https://api.github.com/repos/a/b", "coder");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "method DELETE is not in [GET]")) << e.text;
  EXPECT_TRUE(has(e.text,
                  "decision: denied: method_denied (rule gh-api: method DELETE not "
                  "allowed)"))
      << e.text;

  e = run("GET", "https://api.github.com/repos/a/b", "coder", "websocket");
  EXPECT_TRUE(e.allowed) << e.text;
  e = run("GET", "https://api.github.com/repos/a/b", "coder", "h2c");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "upgrade 'h2c' is not in [websocket]")) << e.text;
}

TEST_F(Explain, NeedsInspection) {
  const auto e = run("GET", "https://www.github.com:8443/", "coder");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "an opaque tunnel hides (set inspect: true)") ||
              has(e.text, "which an opaque tunnel hides"))
      << e.text;
  EXPECT_TRUE(has(e.text, "decision: denied: needs_inspection")) << e.text;
}

TEST_F(Explain, ConnectForm) {
  auto e = run("CONNECT", "pypi.org:443");
  EXPECT_TRUE(e.allowed) << e.text;
  EXPECT_FALSE(has(e.text, "inner request")) << e.text;
  e = run("connect", "pypi.org:443");  // the function takes the method as given
  EXPECT_TRUE(e.input_error);
  e = run("CONNECT", "pypi.org");
  EXPECT_TRUE(e.input_error);
  EXPECT_TRUE(has(e.text, "expected host:port")) << e.text;
}

TEST_F(Explain, IpLiteralGetsTheGuard) {
  auto e = run("GET", "http://127.0.0.1:8080/", "coder");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "127.0.0.1 is an IP literal: refused (loopback)")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: denied: destination_ip_prohibited")) << e.text;
  // The rule's own CIDR exception lets this one through.
  e = run("GET", "http://10.1.2.3:8080/", "coder");
  EXPECT_TRUE(e.allowed) << e.text;
  EXPECT_TRUE(has(e.text, "10.1.2.3 is an IP literal: allowed")) << e.text;
}

TEST_F(Explain, PinnedAddressesGetTheGuard) {
  const auto e = run("GET", "http://internal.example/", "coder");
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "pins its addresses")) << e.text;
  EXPECT_TRUE(has(e.text, "10.9.9.9: refused (private)")) << e.text;
}

TEST_F(Explain, ReportMode) {
  const auto e = run("GET", "https://trial.example:8443/", "coder");
  EXPECT_TRUE(e.allowed) << e.text;
  EXPECT_TRUE(has(e.text, "report mode applies (rule trial)")) << e.text;
  EXPECT_TRUE(has(e.text, "decision: allowed in report mode; would be denied: port_denied"))
      << e.text;
}

TEST_F(Explain, InputErrors) {
  auto e = run("GET", "https://pypi.org/", "nobody");
  EXPECT_TRUE(e.input_error);
  EXPECT_FALSE(e.allowed);
  EXPECT_TRUE(has(e.text, "unknown agent 'nobody' (agents: default, coder)")) << e.text;
  e = run("GET", "ftp://pypi.org/");
  EXPECT_TRUE(e.input_error);
  e = run("GET", "http://user@pypi.org/");
  EXPECT_TRUE(e.input_error);
  e = run("GET", "https://pypi.org:0/");
  EXPECT_TRUE(e.input_error);
  e = run("", "https://pypi.org/");
  EXPECT_TRUE(e.input_error);
  e = run("GE T", "https://pypi.org/");
  EXPECT_TRUE(e.input_error);
  e = run("CONNECT", "http://pypi.org/");
  EXPECT_TRUE(e.input_error);
}

}  // namespace
}  // namespace airlock::policy
