#include "policy/loader.hpp"

#include "policy/token.hpp"
#include "test_util.hpp"

#include "unprivileged.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace airlock::policy {
namespace {

using test::must_load;

std::vector<load_error> errors_of(std::string_view yaml, const std::string& name = "p.yaml") {
  auto r = load_string(yaml, name);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.policy, nullptr);
  return r.errors;
}

std::string dump(const std::vector<load_error>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += e.to_string() + "\n";
  return out;
}

// Exactly one error, at line:column, for key, whose message contains `message`.
void expect_error(std::string_view yaml, int line, int column, std::string_view key,
                  std::string_view message) {
  const auto errors = errors_of(yaml);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].file, "p.yaml");
  EXPECT_EQ(errors[0].line, line) << dump(errors);
  EXPECT_EQ(errors[0].column, column) << dump(errors);
  EXPECT_EQ(errors[0].key, key) << dump(errors);
  EXPECT_NE(errors[0].message.find(message), std::string::npos) << dump(errors);
}

constexpr std::string_view rules_ok = "rules:\n  - {name: r, hosts: [example.com]}\n";

// ---------------------------------------------------------------- defaults and values

TEST(Loader, EmptyPolicyGetsDefaults) {
  auto p = must_load("");
  ASSERT_TRUE(p);
  const auto& m = p->model();
  EXPECT_EQ(m.mode, model::mode::enforce);
  EXPECT_EQ(m.listen.proxy, "127.0.0.1:3128");
  EXPECT_EQ(m.listen.admin, "127.0.0.1:9464");
  EXPECT_EQ(m.limits.header_bytes, 64u * 1024);
  EXPECT_EQ(m.limits.header_count, 100u);
  EXPECT_EQ(m.limits.body_bytes, 10u << 20);
  EXPECT_EQ(m.limits.response_bytes, 1ull << 30);
  EXPECT_EQ(m.limits.connect_timeout, std::chrono::seconds(5));
  EXPECT_EQ(m.limits.max_connections, 10000u);
  EXPECT_TRUE(m.network.block_private);
  EXPECT_EQ(m.audit.path, "-");
  EXPECT_TRUE(p->rules().empty());
  EXPECT_TRUE(p->agents().empty());
  EXPECT_EQ(m.source, "test.yaml");
}

TEST(Loader, VersionIsSha256OfTheBytes) {
  const std::string yaml = "mode: report\n";
  auto p = must_load(yaml);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->version(), sha256_hex(yaml));
  EXPECT_EQ(p->version().size(), 64u);
  // A comment changes the bytes, so the version.
  auto q = must_load("mode: report\n# note\n");
  ASSERT_TRUE(q);
  EXPECT_NE(q->version(), p->version());
}

TEST(Loader, RuleDefaults) {
  auto p = must_load(rules_ok);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->rules().size(), 1u);
  const auto& r = p->rules()[0];
  EXPECT_EQ(r.name, "r");
  EXPECT_EQ(r.ports, (std::vector<model::port_range>{{80, 80}, {443, 443}}));
  EXPECT_TRUE(r.allows_http);
  EXPECT_TRUE(r.allows_https);
  EXPECT_FALSE(r.inspect);
  EXPECT_FALSE(r.checks_requests);
  EXPECT_EQ(r.mode, model::mode::enforce);
  EXPECT_TRUE(r.upgrades.empty());
  EXPECT_TRUE(r.pinned.empty());
  EXPECT_EQ(r.index, 0u);
  ASSERT_NE(r.source, nullptr);
  EXPECT_EQ(r.source->at.line, 2);
}

TEST(Loader, AllKeysParse) {
  auto p = must_load(R"(mode: report
listen: {proxy: '[::1]:0', admin: off}
limits: {header_bytes: 32KiB, header_count: 50, head_timeout: 2500ms, body_bytes: 0,
         response_bytes: 2GiB, connect_timeout: 2s, dns_timeout: 1s, idle_timeout: 2m,
         response_timeout: 1h, drain_timeout: 0, max_connections: 7,
         max_connections_per_client: 3}
network: {block_private: false, allow_cidrs: ['10.1.0.0/16', 'fd00::/8']}
audit: {path: 'off'}
agents:
  default: {rules: [a]}
  coder:
    rules: [b, a]
    token_sha256: 'E2186DBDB1BB4193608605E84F33208765B5693B55EDD4F730A719A100EEEA6F'
    sources: ['10.0.0.0/8', '::1']
rules:
  - name: a
    hosts: [Example.COM., '*.Example.org', '127.1', '[::1]']
    host_regex: ['^[a-z]+\.example\.net$']
    ports: [80, 8443]
    methods: [get, POST]
    paths: ['^/repos/.*']
    upgrades: [WebSocket]
    addresses: [127.0.0.1, '::1']
    allow_cidrs: [127.0.0.1/32]
    mode: enforce
  - name: b
    hosts: [b.example]
    inspect: false
)");
  ASSERT_TRUE(p);
  const auto& m = p->model();
  EXPECT_EQ(m.mode, model::mode::report);
  EXPECT_EQ(m.listen.proxy, "[::1]:0");
  EXPECT_EQ(m.listen.admin, "");
  EXPECT_EQ(m.limits.header_bytes, 32u * 1024);
  EXPECT_EQ(m.limits.header_count, 50u);
  EXPECT_EQ(m.limits.head_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(m.limits.body_bytes, 0u);
  EXPECT_EQ(m.limits.response_bytes, 2ull << 30);
  EXPECT_EQ(m.limits.idle_timeout, std::chrono::minutes(2));
  EXPECT_EQ(m.limits.response_timeout, std::chrono::hours(1));
  EXPECT_EQ(m.limits.drain_timeout, std::chrono::milliseconds(0));
  EXPECT_EQ(m.limits.max_connections, 7u);
  EXPECT_EQ(m.limits.max_connections_per_client, 3u);
  EXPECT_FALSE(m.network.block_private);
  EXPECT_EQ(m.network.allow_cidrs.size(), 2u);
  EXPECT_EQ(m.audit.path, "off");

  ASSERT_EQ(p->agents().size(), 2u);
  const auto* coder = p->find_agent("coder");
  ASSERT_NE(coder, nullptr);
  ASSERT_EQ(coder->rules.size(), 2u);
  EXPECT_EQ(coder->rules[0]->name, "b");
  EXPECT_EQ(coder->rules[1]->name, "a");
  // Lower-cased so the comparison with a computed hash works.
  EXPECT_EQ(coder->token_sha256,
            "e2186dbdb1bb4193608605e84f33208765b5693b55edd4f730a719a100eeea6f");
  EXPECT_EQ(coder->sources.size(), 2u);
  EXPECT_EQ(p->find_agent("nobody"), nullptr);

  const auto& a = p->rules()[0];
  EXPECT_EQ(a.ports, (std::vector<model::port_range>{{80, 80}, {8443, 8443}}));
  EXPECT_TRUE(a.checks_requests);
  EXPECT_EQ(a.upgrades, std::vector<std::string>{"websocket"});
  ASSERT_EQ(a.pinned.size(), 2u);
  EXPECT_EQ(a.pinned[0].to_string(), "127.0.0.1");
  EXPECT_EQ(a.pinned[1].to_string(), "::1");
  ASSERT_EQ(a.allow_cidrs.size(), 1u);
  // The report policy mode is overridden by the rule; rule b inherits it.
  EXPECT_EQ(a.mode, model::mode::enforce);
  EXPECT_EQ(p->rules()[1].mode, model::mode::report);
  // Normalised in the model too: what explain and the audit show is what is matched.
  EXPECT_EQ(a.source->hosts,
            (std::vector<std::string>{"example.com", "*.example.org", "127.0.0.1", "::1"}));
  EXPECT_EQ(a.source->methods, (std::vector<std::string>{"GET", "POST"}));
}

TEST(Loader, SizesAndDurationsAcceptPlainNumbers) {
  auto p = must_load("limits: {header_bytes: 4096, connect_timeout: 3}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->limits().header_bytes, 4096u);
  EXPECT_EQ(p->limits().connect_timeout, std::chrono::seconds(3));
}

TEST(Loader, AdminCanBeDisabled) {
  for (std::string_view v : {"off", "''", "false", ""}) {
    auto p = must_load(std::string("listen: {admin: ") + std::string(v) + "}\n");
    ASSERT_TRUE(p) << v;
    EXPECT_EQ(p->model().listen.admin, "") << v;
  }
}

TEST(Loader, AdminHostsAreLowercasedHostNames) {
  auto p = must_load("listen:\n  admin_hosts: [Airlock-Admin.Internal, monitoring-airlock]\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->model().listen.admin_hosts,
            (std::vector<std::string>{"airlock-admin.internal", "monitoring-airlock"}));
  EXPECT_TRUE(must_load("")->model().listen.admin_hosts.empty());
  // Each bad entry is reported where it is written.
  expect_error("listen:\n  admin_hosts:\n    - ok.example\n    - 10.0.0.5\n", 4, 7,
               "listen.admin_hosts[1]", "IP literals are always accepted");
  for (std::string_view bad : {"'*.example.com'", "admin.example:9464", "'admin.example.'",
                               "-admin.example", "''", "'a..b'"}) {
    expect_error(std::string("listen: {admin_hosts: [") + std::string(bad) + "]}\n", 1, 24,
                 "listen.admin_hosts[0]", "must be a host name");
  }
  expect_error("listen: {admin_hosts: admin.example}\n", 1, 23, "listen.admin_hosts",
               "expected a list");
}

// ---------------------------------------------------------------- relative paths

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-policy-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view content) {
    const auto path = dir_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << content;
    return path.string();
  }
  std::filesystem::path dir_;
};

using LoaderFiles = TempDir;

TEST_F(LoaderFiles, RelativePathsResolveAgainstThePolicyFolder) {
  write("certs/ca.crt", "cert");
  write("certs/ca.key", "key");
  const std::string policy = write("conf/policy.yaml",
                                   "tls: {ca_cert: ../certs/ca.crt, ca_key: "
                                   "../certs/./ca.key}\naudit: {path: logs/audit.log}\n");
  auto r = load_file(policy);
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const auto& m = r.policy->model();
  EXPECT_EQ(m.tls.ca_cert, (dir_ / "certs/ca.crt").string());
  EXPECT_EQ(m.tls.ca_key, (dir_ / "certs/ca.key").string());
  EXPECT_EQ(m.audit.path, (dir_ / "conf/logs/audit.log").string());
  EXPECT_EQ(m.source, policy);
}

TEST_F(LoaderFiles, AbsolutePathsAndSpecialAuditValuesStay) {
  write("ca.crt", "c");
  write("ca.key", "k");
  const std::string yaml = "tls: {ca_cert: " + (dir_ / "ca.crt").string() +
                           ", ca_key: " + (dir_ / "ca.key").string() + "}\naudit: {path: '-'}\n";
  auto r = load_string(yaml, (dir_ / "x/policy.yaml").string());
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_EQ(r.policy->model().tls.ca_cert, (dir_ / "ca.crt").string());
  EXPECT_EQ(r.policy->model().audit.path, "-");
}

TEST_F(LoaderFiles, MissingTlsFilesAreErrors) {
  write("ca.crt", "c");
  const std::string policy = write("policy.yaml",
                                   "tls:\n  ca_cert: ca.crt\n  ca_key: ca.key\n"
                                   "  upstream_ca: nope/bundle.pem\n");
  auto r = load_file(policy);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 2u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "tls.ca_key");
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].column, 11);
  EXPECT_NE(r.errors[0].message.find("No such file or directory"), std::string::npos);
  EXPECT_EQ(r.errors[1].key, "tls.upstream_ca");
  EXPECT_EQ(r.errors[1].line, 4);
}

TEST_F(LoaderFiles, TlsDirectoryAndUnreadableFile) {
  write("dir/x", "");
  const std::string key = write("ca.key", "k");
  ::chmod(key.c_str(), 0);
  const std::string policy = write("policy.yaml", "tls: {ca_cert: dir, ca_key: ca.key}\n");
  auto r = load_file(policy);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors[0].key, "tls.ca_cert");
  EXPECT_NE(r.errors[0].message.find("is a directory"), std::string::npos);
  // The unreadable key: as an unprivileged user, also when the tests run as root (CI), since
  // root reads anything.
  ::chmod(dir_.c_str(), 0755);  // nobody may look into the folder and read the policy
  EXPECT_EQ(airlock::test::as_unprivileged([&]() -> std::string {
              auto u = load_file(policy);
              if (u.errors.size() != 2u) return "want 2 errors: " + dump(u.errors);
              if (u.errors[1].message.find("Permission denied") == std::string::npos)
                return "not 'Permission denied': " + dump(u.errors);
              return "";
            }),
            "");
}

TEST_F(LoaderFiles, UnreadablePolicyFileIsOneError) {
  auto r = load_file((dir_ / "missing.yaml").string());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, (dir_ / "missing.yaml").string());
  EXPECT_EQ(r.errors[0].line, 0);
  EXPECT_EQ(r.errors[0].to_string(),
            (dir_ / "missing.yaml").string() + ": cannot read: No such file or directory");

  auto d = load_file(dir_.string());
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].message.find("directory"), std::string::npos);
}

TEST_F(LoaderFiles, ErrorsNameTheFile) {
  const std::string policy = write("bad.yaml", "mode: sometimes\n");
  auto r = load_file(policy);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(), policy + ":1:7: mode: expected enforce or report");
}

// ---------------------------------------------------------------- error kinds

TEST(LoaderErrors, ToStringFormat) {
  load_error e{"f.yaml", 3, 7, "rules[0].hosts[1]", "invalid host 'a b'"};
  EXPECT_EQ(e.to_string(), "f.yaml:3:7: rules[0].hosts[1]: invalid host 'a b'");
  load_error top{"f.yaml", 1, 1, "", "mapping expected"};
  EXPECT_EQ(top.to_string(), "f.yaml:1:1: mapping expected");
}

TEST(LoaderErrors, UnknownKeyWithSuggestion) {
  expect_error("rules:\n  - name: r\n    hots: [a.example]\n", 3, 5, "rules[0].hots",
               "unknown key 'hots'; did you mean 'hosts'?");
  // Transposition counts as one edit.
  expect_error("limtis: {}\n", 1, 1, "limtis", "did you mean 'limits'?");
}

TEST(LoaderErrors, UnknownKeyWithoutSuggestion) {
  const auto errors = errors_of("listen: {proxy: 127.0.0.1:3128, banana: 1}\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "listen.banana");
  EXPECT_EQ(errors[0].message, "unknown key 'banana'");
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_EQ(errors[0].column, 33);
}

TEST(Loader, AuditOnFailure) {
  EXPECT_TRUE(must_load("agents: {default: {rules: []}}\n")->model().audit.deny_on_failure);
  EXPECT_FALSE(must_load("audit: {on_failure: continue}\nagents: {default: {rules: []}}\n")
                   ->model()
                   .audit.deny_on_failure);
  EXPECT_TRUE(must_load("audit: {on_failure: deny}\nagents: {default: {rules: []}}\n")
                  ->model()
                  .audit.deny_on_failure);
  const auto errors = errors_of("audit: {on_failure: allow}\nagents: {default: {rules: []}}\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "audit.on_failure");
  EXPECT_NE(errors[0].message.find("must be deny or continue"), std::string::npos);
}

TEST(LoaderErrors, UnknownKeysEverywhere) {
  const auto errors = errors_of(R"(foo: 1
listen: {prxy: x}
tls: {cert: x}
limits: {body: 1}
network: {block: true}
audit: {file: x}
agents:
  default: {rules: [], tokn: x}
rules:
  - {name: r, hosts: [a.example], port: [1]}
)");
  ASSERT_EQ(errors.size(), 8u) << dump(errors);
  EXPECT_EQ(errors[0].key, "foo");
  EXPECT_EQ(errors[1].key, "listen.prxy");
  EXPECT_NE(errors[1].message.find("did you mean 'proxy'"), std::string::npos);
  EXPECT_EQ(errors[2].key, "tls.cert");
  EXPECT_EQ(errors[3].key, "limits.body");
  EXPECT_EQ(errors[4].key, "network.block");
  EXPECT_EQ(errors[5].key, "audit.file");
  EXPECT_EQ(errors[6].key, "agents.default.tokn");
  EXPECT_EQ(errors[7].key, "rules[0].port");
  EXPECT_NE(errors[7].message.find("did you mean 'ports'"), std::string::npos);
  const int lines[] = {1, 2, 3, 4, 5, 6, 8, 10};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(errors[i].line, lines[i]) << errors[i].key;
}

TEST(LoaderErrors, InjectAndRedactAreRuleKeys) {
  // Once refused as "not supported yet"; now parsed and checked (credentials_test.cpp). An
  // empty inject is still an error: it would protect nothing.
  const auto errors = errors_of(R"(redactors: []
agents:
  default: {rules: [r]}
rules:
  - name: r
    hosts: [a.example]
    ports: [80]
    inject: {}
    redact: []
)");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].inject");
  EXPECT_EQ(errors[0].message, "inject needs headers, query, basic or require");
  EXPECT_EQ(errors[0].line, 8);
  EXPECT_EQ(errors[0].column, 13);
}

TEST(LoaderRequestControls, ParsesEveryKey) {
  auto p = test::must_load(R"(agents:
  coder:
    rules: [api]
    rate: {requests_per_minute: 600, burst: 50, upload_bytes_per_second: 1MiB,
           download_bytes_per_second: 10MiB, concurrent: 20, requests_per_hour: 10000,
           bytes_per_hour: 1GiB}
    breaker: {max_failures: 50, window: 1m, cooldown: 5m}
rules:
  - name: api
    hosts: [api.example]
    ports: [80]
    rate: {requests_per_second: 5, burst: 10}
    query: {params: {per_page: '^[0-9]{1,3}$', page: ''}, required: [per_page], unknown: strip}
    headers: {required: [X-Request-Id], forbidden: [Cookie], match: {Accept: '^a/b$'}}
    body:
      max_bytes: 1MiB
      json:
        model: {type: string, enum: [small, large], required: true}
        max_tokens: {type: integer, minimum: 1, maximum: 4096}
        user.name: {type: string, pattern: '^[a-z]+$', max_length: 64}
)");
  ASSERT_TRUE(p);
  const auto& a = p->model().agents[0];
  EXPECT_EQ(a.rate.requests, 600u);
  EXPECT_EQ(a.rate.per, std::chrono::milliseconds(60'000));
  EXPECT_EQ(a.rate.requests_key, "requests_per_minute");
  EXPECT_EQ(a.rate.burst, 50u);
  EXPECT_EQ(a.rate.upload_bytes_per_second, 1u << 20);
  EXPECT_EQ(a.rate.download_bytes_per_second, 10u << 20);
  EXPECT_EQ(a.rate.concurrent, 20u);
  EXPECT_EQ(a.rate.requests_per_hour, 10000u);
  EXPECT_EQ(a.rate.bytes_per_hour, 1ull << 30);
  EXPECT_EQ(a.breaker.max_failures, 50u);
  EXPECT_EQ(a.breaker.window, std::chrono::milliseconds(60'000));
  EXPECT_EQ(a.breaker.cooldown, std::chrono::milliseconds(300'000));
  const auto& r = p->rules()[0];
  EXPECT_EQ(r.source->rate.requests, 5u);
  EXPECT_EQ(r.source->rate.per, std::chrono::milliseconds(1'000));
  EXPECT_TRUE(r.checks.query.active);
  EXPECT_EQ(r.checks.query.unknown, model::unknown_params::strip);
  ASSERT_EQ(r.checks.query.params.size(), 2u);
  EXPECT_EQ(r.checks.query.params[0].name, "page");  // sorted
  EXPECT_EQ(r.checks.headers.forbidden, std::vector<std::string>{"cookie"});
  EXPECT_EQ(r.checks.body.max_bytes, 1u << 20);
  EXPECT_TRUE(r.checks.body.json);
  ASSERT_EQ(r.checks.body.fields.size(), 3u);
  EXPECT_EQ(r.checks.body.fields[2].path, (std::vector<std::string>{"user", "name"}));
  EXPECT_TRUE(r.checks_requests);
}

TEST(LoaderRequestControls, ErrorsNameLineAndKey) {
  const auto errors = errors_of(R"(agents:
  a:
    rules: [r]
    rate: {requests_per_second: 5, requests_per_minute: 60, concurrent: 0}
    breaker: {max_failures: -1, window: soon}
rules:
  - name: r
    hosts: [a.example]
    ports: [80]
    rate: {burst: 3, bytes_per_hour: lots}
    query: {params: {q: '('}, unknown: ignore}
    headers: {required: ['bad header']}
    body: {json: {model: {type: text, maximum: x}}}
)");
  auto find = [&](std::string_view key) -> const load_error* {
    for (const auto& e : errors)
      if (e.key == key) return &e;
    return nullptr;
  };
  struct want {
    const char* key;
    int line;
    const char* text;
  };
  const want wants[] = {
      {"agents.a.rate.requests_per_minute", 4, "not both"},
      {"agents.a.rate.concurrent", 4, "between 1 and"},
      {"agents.a.breaker.max_failures", 5, "expected an integer"},
      {"agents.a.breaker.window", 5, "invalid duration"},
      {"rules[0].rate.burst", 10, "needs requests_per_second"},
      {"rules[0].rate.bytes_per_hour", 10, "invalid size"},
      {"rules[0].query.params.q", 11, "regular expression"},
      {"rules[0].query.unknown", 11, "refuse, strip or allow"},
      {"rules[0].body.json.model.type", 13, "expected string, number"},
      {"rules[0].body.json.model.maximum", 13, "expected a number"},
  };
  for (const auto& w : wants) {
    const auto* e = find(w.key);
    ASSERT_NE(e, nullptr) << w.key << "\n" << dump(errors);
    EXPECT_EQ(e->line, w.line) << w.key;
    EXPECT_NE(e->message.find(w.text), std::string::npos) << w.key << ": " << e->message;
  }
  const auto* h = find("rules[0].headers.required[0]");
  ASSERT_NE(h, nullptr) << dump(errors);
  EXPECT_EQ(h->line, 12);
}

TEST(LoaderErrors, WrongTypes) {
  expect_error("rules: {name: r}\n", 1, 8, "rules", "expected a list of rules, got a mapping");
  expect_error("agents: [a]\n", 1, 9, "agents", "expected a mapping of agent names");
  expect_error("agents:\n  default: {rules: pypi}\nrules:\n  - {name: pypi, hosts: [pypi.org]}\n",
               2, 20, "agents.default.rules", "expected a list, got a scalar");
  expect_error("rules:\n  - name: [r]\n    hosts: [a.example]\n", 2, 11, "rules[0].name",
               "expected a string, got a list");
  expect_error("rules:\n  - just-a-name\n", 2, 5, "rules[0]", "expected a mapping");
  expect_error("limits: 5\n", 1, 9, "limits", "expected a mapping, got a scalar");
  expect_error("network: {block_private: yes}\n", 1, 26, "network.block_private",
               "expected true or false");
  expect_error("rules:\n  - {name: r, hosts: [a.example], inspect: 1}\n", 2, 44, "rules[0].inspect",
               "expected true or false");
  expect_error("mode: Enforce\n", 1, 7, "mode", "expected enforce or report");
  expect_error("rules:\n  - {name: r, hosts: [a.example], mode: audit}\n", 2, 41, "rules[0].mode",
               "expected enforce or report");
  expect_error("[1, 2]\n", 1, 1, "", "the policy must be a mapping, got a list");
  expect_error("rules:\n  - {name: r, hosts: [a.example, [b]]}\n", 2, 34, "rules[0].hosts[1]",
               "expected a string");
  expect_error("agents:\n  default: [x]\n", 2, 12, "agents.default", "expected a mapping");
}

TEST(LoaderErrors, NonStringKeys) {
  expect_error("? [a, b]\n: 1\n", 1, 3, "", "keys must be strings");
}

TEST(LoaderErrors, DuplicateKeys) {
  expect_error("mode: report\nmode: enforce\n", 2, 1, "mode", "duplicate key 'mode'");
  expect_error("agents:\n  a: {}\n  a: {}\n", 3, 3, "agents.a", "duplicate agent 'a'");
}

TEST(LoaderErrors, BadSizesAndDurations) {
  expect_error("limits:\n  body_bytes: 10XB\n", 2, 15, "limits.body_bytes", "invalid size '10XB'");
  expect_error("limits:\n  body_bytes: -1\n", 2, 15, "limits.body_bytes", "invalid size");
  expect_error("limits:\n  header_bytes: 0\n", 2, 17, "limits.header_bytes",
               "must be at least 1 bytes");
  expect_error("limits:\n  response_bytes: 99999999999999999999\n", 2, 19, "limits.response_bytes",
               "invalid size");
  expect_error("limits:\n  idle_timeout: 5 minutes\n", 2, 17, "limits.idle_timeout",
               "invalid duration '5 minutes'");
  expect_error("limits:\n  connect_timeout: 0s\n", 2, 20, "limits.connect_timeout",
               "must be at least 1ms");
  expect_error("limits:\n  header_count: 0\n", 2, 17, "limits.header_count",
               "must be between 1 and 4294967295");
  expect_error("limits:\n  max_connections: 4294967296\n", 2, 20, "limits.max_connections",
               "must be between");
  expect_error("limits:\n  max_connections: 1e3\n", 2, 20, "limits.max_connections",
               "expected an integer, got '1e3'");
  expect_error("limits:\n  head_timeout: [1s]\n", 2, 17, "limits.head_timeout",
               "expected a duration, got a list");
}

TEST(LoaderErrors, Ports) {
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    ports: [443, 0]\n", 4, 18,
               "rules[0].ports[1]", "must be between 1 and 65535");
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    ports: [65536]\n", 4, 13,
               "rules[0].ports[0]", "must be between 1 and 65535");
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    ports: [https]\n", 4, 13,
               "rules[0].ports[0]",
               "expected a port or a range of ports (443, 8000-8999), got 'https'");
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    ports: [0x1bb]\n", 4, 13,
               "rules[0].ports[0]", "expected a port or a range");
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    ports: []\n", 4, 12,
               "rules[0].ports", "must not be empty");
}

TEST(LoaderErrors, BadCidrsAndAddresses) {
  expect_error("network:\n  allow_cidrs: [10.0.0.0/8, 10.0.0.0/33]\n", 2, 29,
               "network.allow_cidrs[1]", "invalid CIDR '10.0.0.0/33'");
  expect_error("agents:\n  a: {sources: [bogus]}\n", 2, 17, "agents.a.sources[0]",
               "invalid CIDR 'bogus'");
  expect_error("rules:\n  - {name: r, hosts: [a.example], allow_cidrs: [1.2.3.4/-1]}\n", 2, 49,
               "rules[0].allow_cidrs[0]", "invalid CIDR");
  expect_error("rules:\n  - {name: r, hosts: [a.example], addresses: [1.2.3.4, a.example]}\n", 2,
               56, "rules[0].addresses[1]", "invalid address 'a.example'");
}

TEST(LoaderErrors, BadHosts) {
  expect_error("rules:\n  - name: r\n    hosts: ['*']\n", 3, 13, "rules[0].hosts[0]",
               "'*' is only allowed as a leading '*.'");
  expect_error("rules:\n  - name: r\n    hosts: ['a.*.example']\n", 3, 13, "rules[0].hosts[0]",
               "'*' is only allowed");
  expect_error("rules:\n  - name: r\n    hosts: ['*.*.example']\n", 3, 13, "rules[0].hosts[0]",
               "'*' is only allowed");
  expect_error("rules:\n  - name: r\n    hosts: [ok.example, 'bad host']\n", 3, 25,
               "rules[0].hosts[1]", "invalid host 'bad host'");
  expect_error("rules:\n  - name: r\n    hosts: ['*.10.0.0.1']\n", 3, 13, "rules[0].hosts[0]",
               "needs a DNS name");
  expect_error("rules:\n  - name: r\n    hosts: ['*.']\n", 3, 13, "rules[0].hosts[0]",
               "invalid host");
  expect_error("rules:\n  - name: r\n    hosts: ['http://a.example/']\n", 3, 13,
               "rules[0].hosts[0]", "invalid host");
  expect_error("rules:\n  - name: r\n", 2, 5, "rules[0]", "matches no host");
  expect_error("rules:\n  - name: r\n    hosts: []\n", 3, 12, "rules[0].hosts", "matches no host");
}

TEST(LoaderErrors, BadRegexesReportRe2Text) {
  expect_error("rules:\n  - name: r\n    host_regex: ['(unclosed']\n", 3, 18,
               "rules[0].host_regex[0]", "invalid regular expression: missing ): (unclosed");
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    paths: ['^/ok', '[z-a]']\n", 4, 21,
               "rules[0].paths[1]", "invalid regular expression: invalid character class range");
  // re2 has no backreferences: refused at load, not silently different at run time.
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    paths: ['(a)\\1']\n", 4, 13,
               "rules[0].paths[0]", "invalid regular expression");
}

TEST(LoaderErrors, RuleNames) {
  expect_error("rules:\n  - hosts: [a.example]\n", 2, 5, "rules[0]", "missing required key 'name'");
  expect_error("rules:\n  - {name: 'has space', hosts: [a.example]}\n", 2, 12, "rules[0].name",
               "invalid rule name 'has space'");
  expect_error("rules:\n  - {name: '', hosts: [a.example]}\n", 2, 12, "rules[0].name",
               "invalid rule name");
  expect_error(
      "rules:\n  - {name: r, hosts: [a.example]}\n  - {name: s, hosts: [b.example]}\n"
      "  - {name: r, hosts: [c.example]}\n",
      4, 12, "rules[2].name", "duplicate rule name 'r' (first at line 2)");
}

TEST(LoaderErrors, AgentsNamingUnknownRules) {
  expect_error(
      "agents:\n  coder: {rules: [github, pipy]}\nrules:\n  - {name: github, hosts: [github.com]}\n"
      "  - {name: pypi, hosts: [pypi.org]}\n",
      2, 27, "agents.coder.rules[1]", "unknown rule 'pipy'; did you mean 'pypi'?");
  expect_error("agents:\n  coder: {rules: [nothing]}\n", 2, 19, "agents.coder.rules[0]",
               "unknown rule 'nothing'");
  expect_error("agents:\n  'a:b': {}\n", 2, 3, "agents.a:b", "invalid agent name");
}

TEST(LoaderErrors, TokenSha256) {
  expect_error("agents:\n  a: {token_sha256: abc}\n", 2, 21, "agents.a.token_sha256",
               "must be 64 hex digits");
  // 64 characters but not hex.
  expect_error(
      "agents:\n  a: {token_sha256: "
      "'zz186dbdb1bb4193608605e84f33208765b5693b55edd4f730a719a100eeea6f'}\n",
      2, 21, "agents.a.token_sha256", "must be 64 hex digits");
  expect_error("agents:\n  a: {token_sha256: ''}\n", 2, 21, "agents.a.token_sha256",
               "must be 64 hex digits");
  // The value is never echoed (it may be the token itself).
  const auto errors = errors_of("agents:\n  a: {token_sha256: my-secret-token}\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to_string().find("my-secret-token"), std::string::npos);
  const std::string hash = sha256_hex("t");
  expect_error("agents:\n  a: {token_sha256: " + hash + "}\n  b: {token_sha256: " + hash + "}\n", 3,
               21, "agents.b.token_sha256", "same token as agent 'a'");
}

TEST(LoaderErrors, Methods) {
  expect_error("rules:\n  - {name: r, hosts: [a.example], methods: [GET, 'GE T']}\n", 2, 50,
               "rules[0].methods[1]", "invalid method 'GE T'");
  expect_error("rules:\n  - {name: r, hosts: [a.example], methods: [connect]}\n", 2, 45,
               "rules[0].methods[0]", "CONNECT cannot be listed");
  expect_error("rules:\n  - {name: r, hosts: [a.example], methods: []}\n", 2, 44,
               "rules[0].methods", "must not be empty");
  expect_error("rules:\n  - {name: r, hosts: [a.example], paths: []}\n", 2, 42, "rules[0].paths",
               "must not be empty");
  expect_error("rules:\n  - {name: r, hosts: [a.example], upgrades: ['web socket']}\n", 2, 46,
               "rules[0].upgrades[0]", "invalid upgrade protocol");
}

TEST(LoaderErrors, InspectNeedsCa) {
  expect_error("rules:\n  - name: r\n    hosts: [a.example]\n    inspect: true\n", 4, 14,
               "rules[0].inspect", "inspect: true needs tls.ca_cert and tls.ca_key");
}

TEST(LoaderErrors, Listen) {
  expect_error("listen: {proxy: 'localhost:3128'}\n", 1, 17, "listen.proxy", "invalid address");
  expect_error("listen: {proxy: '127.0.0.1'}\n", 1, 17, "listen.proxy", "invalid address");
  expect_error("listen: {proxy: '127.0.0.1:65536'}\n", 1, 17, "listen.proxy", "invalid address");
  expect_error("listen: {admin: '::1:9464'}\n", 1, 17, "listen.admin", "invalid address");
  expect_error("listen: {proxy: '127.0.0.1:80', admin: '127.0.0.1:80'}\n", 1, 40, "listen.admin",
               "must differ from listen.proxy");
}

TEST(LoaderErrors, TlsHalfConfigured) {
  expect_error("tls: {ca_key: /dev/null}\n", 1, 15, "tls.ca_key", "set both or neither");
}

TEST(LoaderErrors, AuditEmpty) {
  expect_error("audit: {path: ''}\n", 1, 15, "audit.path", "must not be empty");
}

TEST(LoaderErrors, YamlSyntaxErrorHasPosition) {
  const auto errors = errors_of("rules:\n  - name: r\n    hosts: [a.example\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_GT(errors[0].line, 0);
  EXPECT_GT(errors[0].column, 0);
  EXPECT_EQ(errors[0].key, "");
  EXPECT_FALSE(errors[0].message.empty());

  const auto tabs = errors_of("mode: report\n\tlisten: {}\n");
  ASSERT_EQ(tabs.size(), 1u) << dump(tabs);
  EXPECT_EQ(tabs[0].line, 2);
}

TEST(LoaderErrors, MultipleDocumentsRefused) {
  expect_error("mode: report\n---\nmode: enforce\n", 3, 1, "", "only one YAML document");
}

TEST(LoaderErrors, CollectsAllErrorsInFileOrder) {
  const auto errors = errors_of(R"(mode: maybe
limits: {body_bytes: lots}
agents:
  default: {rules: [missing]}
rules:
  - name: a
    hosts: ['*']
    paths: ['(']
  - name: a
    hosts: [b.example]
    ports: [99999]
)");
  ASSERT_EQ(errors.size(), 7u) << dump(errors);
  EXPECT_EQ(errors[0].key, "mode");
  EXPECT_EQ(errors[1].key, "limits.body_bytes");
  EXPECT_EQ(errors[2].key, "agents.default.rules[0]");
  EXPECT_EQ(errors[3].key, "rules[0].hosts[0]");
  EXPECT_EQ(errors[4].key, "rules[0].paths[0]");
  EXPECT_EQ(errors[5].key, "rules[1].name");
  EXPECT_EQ(errors[6].key, "rules[1].ports[0]");
  for (std::size_t i = 1; i < errors.size(); ++i)
    EXPECT_LE(errors[i - 1].line, errors[i].line);
}

TEST(LoaderErrors, OneMistakeOneError) {
  // A host that is not a string is reported once, not again as "invalid host".
  const auto errors = errors_of("rules:\n  - {name: r, hosts: [{a: b}]}\n");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].key, "rules[0].hosts[0]");
}

TEST(LoaderErrors, TooManyErrorsAreCapped) {
  std::string yaml = "rules:\n";
  for (int i = 0; i < 300; ++i)
    yaml += "  - {name: 'bad name " + std::to_string(i) + "', hosts: [a.example]}\n";
  const auto errors = errors_of(yaml);
  ASSERT_EQ(errors.size(), 101u);
  EXPECT_EQ(errors.back().line, 0);
  EXPECT_NE(errors.back().message.find("too many errors"), std::string::npos);
  EXPECT_EQ(errors[99].line, 101);
}

TEST(LoaderErrors, AliasesDoNotMultiplyWork) {
  // A billion-laughs file: nested aliases describe 4^12 rules. Only the schema is walked, so
  // the nesting is one error, found at once.
  std::string yaml = "x0: &a0 [{name: r, hosts: [a.example]}]\n";
  for (int i = 1; i <= 12; ++i)
    yaml += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) +
            ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + "]\n";
  yaml += "rules: *a12\n";
  const auto errors = errors_of(yaml);
  // 13 unknown keys x0..x12, and 4 entries of rules that are lists, not rules.
  EXPECT_EQ(errors.size(), 17u) << dump(errors);
}

TEST(LoaderErrors, DeepNestingDoesNotCrash) {
  const std::string yaml = "rules: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  const auto errors = errors_of(yaml);
  EXPECT_FALSE(errors.empty());
}

}  // namespace
}  // namespace airlock::policy
