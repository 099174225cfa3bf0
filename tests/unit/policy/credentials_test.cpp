// rules[i].inject and rules[i].redact: parsed, compiled (templates into parts with secret
// indices), and every mistake reported at file:line:column and key without quoting a secret.
#include "policy/credentials.hpp"

#include "core/str_cat.hpp"
#include "policy/credentials_compiler.hpp"
#include "policy/error_sink.hpp"
#include "policy/explain.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "secret_test_util.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::policy {
namespace {

using test::dump;
using test::scoped_env;

constexpr std::string_view gh_value = "ghp_R3alT0kenValue0123456789abcdefABCDEF";  // 40 bytes
constexpr std::string_view gh_fake = "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";   // 40 bytes
constexpr std::string_view svc_value = "svc-key-0123456789";

// The TLS files of the test data folder, so that `inspect: true` loads.
std::string data_policy_path() {
  return std::string(AIRLOCK_POLICY_DATA_DIR) + "/policy.yaml";
}

// Every test runs with the secrets of the spec's example in the environment.
class Credentials : public ::testing::Test {
 protected:
  load_result load(std::string_view yaml, const load_options& options = {}) {
    return load_string(yaml, data_policy_path(), options);
  }
  // Loads `head` + `rules`, which must fail with exactly one error.
  void expect_one(const std::string& rules, int line, int column, std::string_view key,
                  std::string_view message) {
    const auto r = load(head_ + rules);
    EXPECT_FALSE(r.ok());
    ASSERT_EQ(r.errors.size(), 1u) << rules << "\n" << dump(r.errors);
    EXPECT_EQ(r.errors[0].key, key) << dump(r.errors);
    EXPECT_NE(r.errors[0].message.find(message), std::string::npos) << dump(r.errors);
    EXPECT_EQ(r.errors[0].line, line) << dump(r.errors);
    EXPECT_EQ(r.errors[0].column, column) << dump(r.errors);
  }
  std::shared_ptr<const snapshot> must_load(const std::string& rules) {
    auto r = load(head_ + rules);
    EXPECT_TRUE(r.ok()) << dump(r.errors);
    return r.policy;
  }

  scoped_env gh_{"AIRLOCK_TEST_GH", std::string(gh_value)};
  scoped_env svc_{"AIRLOCK_TEST_SVC", std::string(svc_value)};
  // 7 lines; rules start at line 8.
  const std::string head_ = core::str_cat(
      "tls: {ca_cert: tls/ca.crt, ca_key: tls/ca.key}\n"
      "secrets:\n"
      "  github: {env: AIRLOCK_TEST_GH, placeholder: '",
      gh_fake,
      "', hosts: [api.github.com, '*.githubusercontent.com']}\n"
      "  svc:    {env: AIRLOCK_TEST_SVC}\n"
      "redactors:\n"
      "  - {name: ticket, pattern: 'TICKET-[0-9]{6}'}\n"
      "rules:\n");
};

// ------------------------------------------------------------------------------ templates

std::vector<compiled_secret> two_secrets() {
  std::vector<compiled_secret> s(2);
  s[0].name = "a";
  s[0].value = secret_value("AAAAAAAAAA");
  s[1].name = "b-2";
  s[1].value = secret_value("bbbbbbbbbb");
  return s;
}

TEST(SecretTemplate, SplitsIntoPartsAndExpands) {
  const auto secrets = two_secrets();
  struct example {
    std::string_view text;
    std::vector<std::pair<std::string, std::size_t>> parts;
    std::string_view expanded;
  };
  constexpr auto none = secret_template::no_secret;
  const example examples[] = {
      {"Bearer ${secrets.a}", {{"Bearer ", 0}}, "Bearer AAAAAAAAAA"},
      {"${secrets.a}", {{"", 0}}, "AAAAAAAAAA"},
      {"x${secrets.a}y${secrets.b-2}z",
       {{"x", 0}, {"y", 1}, {"z", none}},
       "xAAAAAAAAAAybbbbbbbbbbz"},
      {"${secrets.a}${secrets.a}", {{"", 0}, {"", 0}}, "AAAAAAAAAAAAAAAAAAAA"},
      {"airlock", {{"airlock", none}}, "airlock"},
      {"", {{"", none}}, ""},
      {"$ {} $x }{", {{"$ {} $x }{", none}}, "$ {} $x }{"},
      {"cost: $5", {{"cost: $5", none}}, "cost: $5"},
  };
  for (const auto& e : examples) {
    std::string error;
    const secret_template t = parse_secret_template(e.text, secrets, error);
    EXPECT_EQ(error, "") << e.text;
    ASSERT_EQ(t.parts.size(), e.parts.size()) << e.text;
    for (std::size_t i = 0; i < t.parts.size(); ++i) {
      EXPECT_EQ(t.parts[i].text, e.parts[i].first) << e.text;
      EXPECT_EQ(t.parts[i].secret, e.parts[i].second) << e.text;
    }
    EXPECT_EQ(t.expand(secrets), e.expanded) << e.text;
    EXPECT_EQ(t.uses_secrets(), e.text.find("${") != std::string_view::npos) << e.text;
  }
}

TEST(SecretTemplate, ExpandTakesTheValueOfTheSnapshotItIsGiven) {
  // A rotated secret: same index, new value.
  auto secrets = two_secrets();
  std::string error;
  const secret_template t = parse_secret_template("k=${secrets.b-2}", secrets, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(t.expand(secrets), "k=bbbbbbbbbb");
  secrets[1].value = secret_value("rotated-value");
  EXPECT_EQ(t.expand(secrets), "k=rotated-value");
  // An index the span does not have adds nothing (never reads out of bounds).
  EXPECT_EQ(t.expand(std::span<const compiled_secret>(secrets).first(1)), "k=");
  EXPECT_FALSE(secret_template{}.uses_secrets());
  EXPECT_EQ(secret_template{}.expand(secrets), "");
}

TEST(SecretTemplate, Errors) {
  const auto secrets = two_secrets();
  const std::pair<std::string_view, std::string_view> bad[] = {
      {"${secrets.c}", "unknown secret 'c'"},
      {"${secrets.A}", "unknown secret 'A'"},  // names are case-sensitive
      {"Bearer ${secrets.a", "unterminated '${'"},
      {"${", "unterminated '${'"},
      {"${env.HOME}", "only ${secrets.NAME} references"},
      {"${}", "only ${secrets.NAME} references"},
      {"${ secrets.a }", "only ${secrets.NAME} references"},
      {"${secrets.}", "not a secret name"},
      {"${secrets.a b}", "not a secret name"},
      {"${secrets.a}${secrets.c}", "unknown secret 'c'"},
  };
  for (const auto& [text, message] : bad) {
    std::string error;
    const secret_template t = parse_secret_template(text, secrets, error);
    EXPECT_NE(error.find(message), std::string::npos) << text << ": " << error;
    EXPECT_TRUE(t.parts.empty()) << text;
  }
}

// ------------------------------------------------------------------------------ loading

TEST_F(Credentials, EveryKeyParsesAndCompiles) {
  auto p = must_load(R"(  - name: github
    hosts: [api.github.com]
    ports: [443]
    inspect: true
    inject:
      headers: {Authorization: 'Bearer ${secrets.github}', X-Client: 'airlock'}
      query: {api_key: '${secrets.svc}'}
      require: [github]
    redact: [aws-access-key, email, ticket]
  - name: basic
    hosts: [api.github.com]
    ports: [80]
    inject:
      basic: {username: 'x-access-token', password: '${secrets.github}'}
    redact: {redactors: [ticket], max_bytes: 64MiB}
  - name: cut
    hosts: [other.example]
    ports: [80]
    redact: {max_bytes: 1KiB}
  - name: plain
    hosts: [other.example]
    ports: [80]
    redact: []
  - {name: none, hosts: [other.example]}
)");
  ASSERT_NE(p, nullptr);
  const auto rules = p->rules();
  ASSERT_EQ(rules.size(), 5u);
  const std::size_t gh = 0, svc = 1;
  ASSERT_EQ(p->secrets()[gh].name, "github");

  // The model, as written.
  const model::inject& mi = p->model().rules[0].inject;
  EXPECT_TRUE(mi.present);
  ASSERT_EQ(mi.headers.size(), 2u);
  EXPECT_EQ(mi.headers[0].first, "Authorization");
  EXPECT_EQ(mi.headers[0].second, "Bearer ${secrets.github}");
  EXPECT_EQ(mi.query[0].second, "${secrets.svc}");
  EXPECT_EQ(mi.require, std::vector<std::string>{"github"});
  EXPECT_FALSE(mi.has_basic);
  EXPECT_EQ(p->model().rules[0].redact.redactors,
            (std::vector<std::string>{"aws-access-key", "email", "ticket"}));
  EXPECT_EQ(p->model().rules[1].inject.basic_username, "x-access-token");
  EXPECT_EQ(p->model().rules[1].redact.max_bytes, 64ull << 20);

  // Rule github: compiled.
  const compiled_injection& in = rules[0].inject;
  EXPECT_TRUE(in.active);
  ASSERT_EQ(in.headers.size(), 2u);
  EXPECT_EQ(in.headers[0].first, "Authorization");
  EXPECT_EQ(in.headers[0].second.expand(p->secrets()), core::str_cat("Bearer ", gh_value));
  ASSERT_EQ(in.headers[0].second.parts.size(), 1u);
  EXPECT_EQ(in.headers[0].second.parts[0].text, "Bearer ");
  EXPECT_EQ(in.headers[0].second.parts[0].secret, gh);
  EXPECT_EQ(in.headers[1].first, "X-Client");
  EXPECT_FALSE(in.headers[1].second.uses_secrets());
  EXPECT_EQ(in.headers[1].second.expand(p->secrets()), "airlock");
  ASSERT_EQ(in.query.size(), 1u);
  EXPECT_EQ(in.query[0].first, "api_key");
  EXPECT_EQ(in.query[0].second.expand(p->secrets()), svc_value);
  EXPECT_FALSE(in.has_basic);
  EXPECT_EQ(in.require, std::vector<std::size_t>{gh});
  EXPECT_EQ(in.secrets, (std::vector<std::size_t>{gh, svc}));
  EXPECT_TRUE(rules[0].redact.active);
  EXPECT_EQ(rules[0].redact.redactors,
            (std::vector<std::string>{"aws-access-key", "email", "ticket"}));
  EXPECT_EQ(rules[0].redact.max_bytes, p->limits().response_bytes);
  EXPECT_TRUE(rules[0].checks_requests);

  // Rule basic.
  const compiled_injection& b = rules[1].inject;
  EXPECT_TRUE(b.active);
  EXPECT_TRUE(b.has_basic);
  EXPECT_TRUE(b.headers.empty());
  EXPECT_EQ(b.basic_username.expand(p->secrets()), "x-access-token");
  EXPECT_EQ(b.basic_password.expand(p->secrets()), gh_value);
  EXPECT_EQ(b.secrets, std::vector<std::size_t>{gh});
  EXPECT_EQ(rules[1].redact.redactors, std::vector<std::string>{"ticket"});
  EXPECT_EQ(rules[1].redact.max_bytes, 64ull << 20);
  EXPECT_TRUE(rules[1].checks_requests);

  // Rules cut, plain: redaction alone.
  EXPECT_FALSE(rules[2].inject.active);
  EXPECT_TRUE(rules[2].redact.active);
  EXPECT_TRUE(rules[2].redact.redactors.empty());
  EXPECT_EQ(rules[2].redact.max_bytes, 1024u);
  EXPECT_TRUE(rules[3].redact.active);
  EXPECT_TRUE(rules[3].redact.redactors.empty());
  EXPECT_EQ(rules[3].redact.max_bytes, p->limits().response_bytes);
  EXPECT_TRUE(rules[3].checks_requests);

  // Rule none: neither.
  EXPECT_FALSE(rules[4].inject.active);
  EXPECT_FALSE(rules[4].redact.active);
  EXPECT_FALSE(rules[4].checks_requests);
}

TEST_F(Credentials, DefaultCutOffFollowsLimits) {
  auto r = load("limits: {response_bytes: 5MiB}\n" + head_ +
                "  - {name: r, hosts: [a.example], ports: [80], redact: [email]}\n");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_EQ(r.policy->rules()[0].redact.max_bytes, 5u << 20);
}

TEST_F(Credentials, HeaderNamesKeepTheirSpellingAndAnyTokenLoads) {
  auto p = must_load(R"(  - name: r
    hosts: [a.example]
    ports: [80]
    inject:
      headers: {x-api-key: '${secrets.svc}', "X-Weird!#$%&'*+-.^_`|~": 'v', Cookie: 'a=b'}
)");
  ASSERT_NE(p, nullptr);
  const auto& h = p->rules()[0].inject.headers;
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].first, "x-api-key");
  EXPECT_EQ(h[1].first, "X-Weird!#$%&'*+-.^_`|~");
  EXPECT_EQ(h[2].first, "Cookie");
}

TEST_F(Credentials, ValidatesWithoutSecretValues) {
  // CI validation (read_secrets off): the structure is checked, the values are not read.
  load_options o;
  o.read_secrets = false;
  auto r = load(head_ + R"(  - name: r
    hosts: [api.github.com]
    ports: [80]
    inject: {headers: {Authorization: 'Bearer ${secrets.github}'}, require: [github]}
)",
                o);
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_EQ(r.policy->rules()[0].inject.headers[0].second.expand(r.policy->secrets()), "Bearer ");
}

// ------------------------------------------------------------------------------ errors

TEST_F(Credentials, InjectShapeErrors) {
  const std::string r = "  - name: r\n    hosts: [a.example]\n    ports: [80]\n";  // lines 8-10
  expect_one(r + "    inject: {}\n", 11, 13, "rules[0].inject",
             "inject needs headers, query, basic or require");
  // (A null value last in the file stands where YAML puts it: the start of the next line.)
  expect_one(r + "    inject:\n", 12, 1, "rules[0].inject", "expected a mapping, got nothing");
  expect_one(r + "    inject: [a]\n", 11, 13, "rules[0].inject", "expected a mapping, got a list");
  expect_one(r + "    inject: {header: {A: b}}\n", 11, 14, "rules[0].inject.header",
             "unknown key 'header'; did you mean 'headers'?");
  expect_one(r + "    inject: {headers: {}}\n", 11, 23, "rules[0].inject.headers",
             "must not be empty");
  expect_one(r + "    inject: {query: {}}\n", 11, 21, "rules[0].inject.query", "must not be empty");
  expect_one(r + "    inject: {headers: [a]}\n", 11, 23, "rules[0].inject.headers",
             "expected a mapping of names to templates, got a list");
  expect_one(r + "    inject: {headers: {A: {x: 1}}}\n", 11, 27, "rules[0].inject.headers.A",
             "expected a string, got a mapping");
  expect_one(r + "    inject: {headers: {A: }}\n", 11, 27, "rules[0].inject.headers.A",
             "expected a string, got nothing");
  expect_one(r + "    inject: {headers: {A: a, A: b}}\n", 11, 30, "rules[0].inject.headers.A",
             "duplicate name 'A'");
  expect_one(r + "    inject: {headers: {'': a}}\n", 11, 24, "rules[0].inject.headers",
             "names must be non-empty strings");
  expect_one(r + "    inject: {require: []}\n", 11, 23, "rules[0].inject.require",
             "must not be empty");
  expect_one(r + "    inject: {require: github}\n", 11, 23, "rules[0].inject.require",
             "expected a list");
}

TEST_F(Credentials, TemplateErrors) {
  const std::string r = "  - name: r\n    hosts: [a.example]\n    ports: [80]\n    inject:\n";
  expect_one(r + "      headers: {A: '${secrets.nope}'}\n", 12, 17, "rules[0].inject.headers.A",
             "unknown secret 'nope'");
  expect_one(r + "      headers: {A: 'Bearer ${secrets.github'}\n", 12, 17,
             "rules[0].inject.headers.A", "unterminated '${'");
  expect_one(r + "      query: {k: '${env.HOME}'}\n", 12, 15, "rules[0].inject.query.k",
             "only ${secrets.NAME} references may be used");
  expect_one(r + "      headers: {A: \"a\\r\\nSet-Cookie: x\"}\n", 12, 17,
             "rules[0].inject.headers.A", "must not hold CR, LF or NUL");
  expect_one(r + "      query: {k: \"a\\nb\"}\n", 12, 15, "rules[0].inject.query.k",
             "must not hold CR, LF or NUL");
  expect_one(r + "      query: {k: \"a\\0b\"}\n", 12, 15, "rules[0].inject.query.k",
             "must not hold CR, LF or NUL");
  expect_one(r + "      headers: {A: \"a\\x01b\"}\n", 12, 17, "rules[0].inject.headers.A",
             "control character");
  expect_one(r + "      headers: {A: \"a\\x7fb\"}\n", 12, 17, "rules[0].inject.headers.A",
             "control character");
  // HTAB is allowed in a field value (RFC 9110 section 5.5); other controls in a query value
  // are percent-encoded.
  EXPECT_NE(must_load(r + "      headers: {A: \"a\\tb\"}\n      query: {k: \"a\\x01b\"}\n"),
            nullptr);
}

TEST_F(Credentials, HeaderNameErrors) {
  const std::string r = "  - name: r\n    hosts: [a.example]\n    ports: [80]\n    inject:\n";
  expect_one(r + "      headers: {'Bad Name': x}\n", 12, 17, "rules[0].inject.headers.Bad Name",
             "invalid header name 'Bad Name' (not an HTTP token)");
  expect_one(r + "      headers: {'A:b': x}\n", 12, 17, "rules[0].inject.headers.A:b",
             "not an HTTP token");
  for (const char* name : {"Host", "Content-Length", "transfer-encoding", "CONNECTION",
                           "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Authorization",
                           "Proxy-Authenticate", "Proxy-Connection", "Expect", "Proxy-Anything"}) {
    expect_one(r + "      headers: {" + name + ": x}\n", 12, 17,
               std::string("rules[0].inject.headers.") + name,
               std::string("'") + name + "' cannot be injected");
  }
  expect_one(r + "      headers: {X-A: a, x-a: b}\n", 12, 25, "rules[0].inject.headers.x-a",
             "duplicate header 'x-a' (names are case-insensitive)");
  expect_one(r + "      headers: {authorization: 'x'}\n      basic: {username: u, password: p}\n",
             12, 17, "rules[0].inject.headers.authorization",
             "basic sets Authorization too: give one or the other");
}

TEST_F(Credentials, BasicErrors) {
  const std::string r = "  - name: r\n    hosts: [a.example]\n    ports: [80]\n    inject:\n";
  expect_one(r + "      basic: {username: u}\n", 12, 14, "rules[0].inject.basic",
             "missing required key 'password'");
  expect_one(r + "      basic: {password: p}\n", 12, 14, "rules[0].inject.basic",
             "missing required key 'username'");
  expect_one(r + "      basic: {}\n", 12, 14, "rules[0].inject.basic", "missing required key");
  expect_one(r + "      basic: 'u:p'\n", 12, 14, "rules[0].inject.basic", "expected a mapping");
  expect_one(r + "      basic: {username: u, password: p, realm: x}\n", 12, 41,
             "rules[0].inject.basic.realm", "unknown key 'realm'");
  expect_one(r + "      basic: {username: 'a:b', password: p}\n", 12, 25,
             "rules[0].inject.basic.username", "a Basic user-id cannot hold ':'");
  expect_one(r + "      basic: {username: '${secrets.nope}', password: p}\n", 12, 25,
             "rules[0].inject.basic.username", "unknown secret 'nope'");
  // A ':' in the password is fine (RFC 7617: the first colon splits).
  EXPECT_NE(must_load(r + "      basic: {username: u, password: 'p:q'}\n"), nullptr);
}

TEST_F(Credentials, SecretValuesChecked) {
  // A secret whose value holds ':' cannot be a Basic user-id.
  scoped_env colon("AIRLOCK_TEST_COLON", "user:with-colon");
  const auto ok =
      load(core::str_cat("secrets:\n  c: {env: AIRLOCK_TEST_COLON}\nrules:\n",
                         "  - name: r\n    hosts: [a.example]\n    ports: [80]\n",
                         "    inject:\n      basic: {username: '${secrets.c}', password: p}\n"));
  ASSERT_EQ(ok.errors.size(), 1u) << dump(ok.errors);
  EXPECT_EQ(ok.errors[0].key, "rules[0].inject.basic.username");
  EXPECT_EQ(ok.errors[0].message,
            "secret 'c' holds a ':', which a Basic user-id cannot carry (RFC 7617 section 2)");
  EXPECT_EQ(ok.errors[0].line, 8);
}

TEST_F(Credentials, RequireErrors) {
  const std::string r = "  - name: r\n    hosts: [api.github.com]\n    ports: [80]\n    inject:\n";
  expect_one(r + "      require: [nope]\n", 12, 17, "rules[0].inject.require[0]",
             "unknown secret 'nope'");
  expect_one(r + "      require: [svc]\n", 12, 17, "rules[0].inject.require[0]",
             "secret 'svc' has no placeholder to require (set secrets.svc.placeholder)");
  expect_one(r + "      require: [github, github]\n", 12, 25, "rules[0].inject.require[1]",
             "duplicate secret 'github'");
  expect_one(r + "      require: [{a: b}]\n", 12, 17, "rules[0].inject.require[0]",
             "expected a string");
}

TEST_F(Credentials, HostBinding) {
  // github is bound to api.github.com and *.githubusercontent.com.
  expect_one(R"(  - name: r
    hosts: [api.github.com, evil.example]
    ports: [80]
    inject: {headers: {Authorization: 'Bearer ${secrets.github}'}}
)",
             11, 13, "rules[0].inject",
             "rule 'r' would send secret 'github' to host 'evil.example', which is not in "
             "secrets.github.hosts");
  expect_one(R"(  - name: r
    hosts: [EVIL.example.]
    ports: [80]
    inject: {require: [github]}
)",
             11, 13, "rules[0].inject",
             "rule 'r' requires the placeholder of secret 'github' on host 'evil.example'");
  expect_one(R"(  - name: r
    hosts: [githubusercontent.com]
    ports: [80]
    inject: {basic: {username: u, password: '${secrets.github}'}}
)",
             11, 13, "rules[0].inject", "host 'githubusercontent.com'");
  // Bound hosts (exact, under a wildcard; normalised first), wildcard and regex rule hosts
  // (checked per request), and secrets without hosts all load.
  EXPECT_NE(must_load(R"(  - name: r
    hosts: [API.GitHub.com., raw.githubusercontent.com, '*.example', '*.github.com']
    host_regex: ['.*']
    ports: [80]
    inject:
      headers: {Authorization: 'Bearer ${secrets.github}'}
      query: {k: '${secrets.svc}'}
  - name: s
    hosts: [anything.example]
    ports: [80]
    inject: {query: {k: '${secrets.svc}'}}
)"),
            nullptr);
}

TEST_F(Credentials, RedactErrors) {
  const std::string r = "  - name: r\n    hosts: [a.example]\n    ports: [80]\n";
  expect_one(r + "    redact: [nope]\n", 11, 14, "rules[0].redact[0]",
             "unknown redactor 'nope' (built-in: aws-access-key,");
  expect_one(r + "    redact: [email, ticket, email]\n", 11, 29, "rules[0].redact[2]",
             "duplicate redactor 'email'");
  expect_one(r + "    redact: {redactors: [tikcet]}\n", 11, 26, "rules[0].redact.redactors[0]",
             "; custom: ticket)");
  expect_one(r + "    redact: email\n", 11, 13, "rules[0].redact",
             "expected a list of redactor names or a mapping {redactors, max_bytes}, got a "
             "scalar");
  expect_one(r + "    redact:\n", 12, 1, "rules[0].redact", "got nothing");
  expect_one(r + "    redact: {redactors: [email], max_bytes: lots}\n", 11, 45,
             "rules[0].redact.max_bytes", "invalid size 'lots'");
  expect_one(r + "    redact: {max_bytes: 0}\n", 11, 25, "rules[0].redact.max_bytes",
             "must be at least 1 bytes");
  expect_one(r + "    redact: {redactor: [email]}\n", 11, 14, "rules[0].redact.redactor",
             "did you mean 'redactors'?");
  expect_one(r + "    redact: {redactors: email}\n", 11, 25, "rules[0].redact.redactors",
             "expected a list");
  expect_one(r + "    redact: [[email]]\n", 11, 14, "rules[0].redact[0]", "expected a string");
}

TEST_F(Credentials, UpgradesConflict) {
  expect_one(R"(  - name: r
    hosts: [a.example]
    ports: [80]
    upgrades: [websocket]
    redact: [email]
)",
             11, 15, "rules[0].upgrades",
             "a rule that injects or redacts cannot allow upgrades: an upgraded stream (e.g. a "
             "WebSocket) cannot be redacted");
  expect_one(R"(  - name: r
    hosts: [a.example]
    ports: [80]
    upgrades: [websocket]
    inject: {headers: {X-A: b}}
)",
             11, 15, "rules[0].upgrades", "cannot allow upgrades");
}

TEST_F(Credentials, Port443NeedsInspect) {
  for (const char* feature :
       {"inject: {headers: {X-A: b}}", "redact: []", "redact: {max_bytes: 1MiB}"}) {
    // Ports default to [80, 443].
    expect_one(
        std::string("  - name: r\n    hosts: [a.example]\n    ") + feature + "\n", 8, 5, "rules[0]",
        "rule 'r' checks requests (methods, paths, query, headers, body or mcp) or injects or "
        "redacts, which an HTTPS tunnel on port 443 hides: set inspect: true");
    expect_one(std::string("  - name: r\n    hosts: [a.example]\n    ports: [443, 80]\n    ") +
                   feature + "\n",
               10, 12, "rules[0].ports", "an HTTPS tunnel on port 443 hides");
    EXPECT_NE(must_load(std::string("  - name: r\n    hosts: [a.example]\n    inspect: true\n"
                                    "    ") +
                        feature + "\n"),
              nullptr)
        << feature;
  }
  // On a plain-HTTP port the rule loads, and an opaque CONNECT to it is refused.
  auto p = must_load(
      "  - {name: r, hosts: [a.example], ports: [8080], redact: [email]}\n"
      "agents: {default: {rules: [r]}}\n");
  ASSERT_NE(p, nullptr);
  auto t = net::normalize_host("a.example");
  request_target target;
  target.method = "CONNECT";
  target.host = &*t;
  target.port = 8080;
  target.is_connect = true;
  const decision d = p->decide(*p->find_agent("default"), target);
  EXPECT_EQ(d.reason, core::errc::needs_inspection);
  EXPECT_EQ(d.detail, "rule r injects or redacts; set inspect: true");
  explain_request q;
  q.method = "CONNECT";
  q.url = "a.example:8080";
  const std::string text = explain(*p, q).text;
  EXPECT_NE(text.find("; the rule injects or redacts, which needs the requests an opaque tunnel "
                      "hides (set inspect: true)"),
            std::string::npos)
      << text;
  target.method = "GET";
  target.path = "/";
  target.is_connect = false;
  EXPECT_EQ(p->decide(*p->find_agent("default"), target).reason, core::errc::ok);
}

TEST_F(Credentials, ManyErrorsAtOnce) {
  const auto r = load(head_ + R"(  - name: r
    hosts: [a.example]
    ports: [80]
    inject:
      headers: {Host: x, B: '${secrets.x}', C: '${secrets.github}'}
      query: {q: '${'}
      require: [svc]
    redact: [x, email, email]
)");
  ASSERT_EQ(r.errors.size(), 7u) << dump(r.errors);
  // In file order; the host binding error (C's secret on a.example) stands at inject.
  const char* keys[] = {
      "rules[0].inject",         "rules[0].inject.headers.Host", "rules[0].inject.headers.B",
      "rules[0].inject.query.q", "rules[0].inject.require[0]",   "rules[0].redact[0]",
      "rules[0].redact[2]"};
  for (std::size_t i = 0; i < 7; ++i)
    EXPECT_EQ(r.errors[i].key, keys[i]) << dump(r.errors);
}

// Direct: a value a header cannot carry cannot come through the secret reader (it refuses
// control characters), so the compiler's own check is driven with a hand-made secret.
TEST(CredentialsCompiler, SecretValueAHeaderCannotCarry) {
  std::vector<compiled_secret> secrets(1);
  secrets[0].name = "ctl";
  secrets[0].value = secret_value(
      "abc\x01"
      "defgh");
  std::vector<model::secret> models(1);
  models[0].name = "ctl";
  model::rule rule;
  rule.name = "r";
  rule.inject.present = true;
  rule.inject.headers = {{"X-A", "${secrets.ctl}"}};
  rule.inject.query = {{"k", "${secrets.ctl}"}};
  mark_table marks;
  marks.set("rules[0].inject", {3, 4});
  marks.set("rules[0].inject.headers", {4, 6});
  marks.set("rules[0].inject.headers.X-A", {5, 8});
  marks.set("rules[0].inject.query", {6, 6});
  marks.set("rules[0].inject.query.k", {7, 8});
  error_sink errors("p.yaml");
  compiled_injection in;
  compiled_redaction red;
  compile_credentials(rule, "rules[0]", {secrets, models, {}, 100}, marks, errors, in, red);
  const auto list = errors.take();
  ASSERT_EQ(list.size(), 1u) << dump(list);
  EXPECT_EQ(list[0].to_string(),
            "p.yaml:5:8: rules[0].inject.headers.X-A: secret 'ctl' holds characters a header "
            "cannot carry");
  // The query parameter is percent-encoded: it loads.
  ASSERT_EQ(in.query.size(), 1u);
  EXPECT_EQ(in.query[0].second.expand(secrets), secrets[0].value.reveal());
  EXPECT_FALSE(red.active);
}

// ------------------------------------------------------------------------------ explain

TEST_F(Credentials, ExplainNamesWhatIsInjectedAndRedacted) {
  auto p = must_load(R"(  - name: github
    hosts: [api.github.com]
    ports: [443]
    inspect: true
    inject:
      headers: {Authorization: 'Bearer ${secrets.github}'}
      query: {api_key: '${secrets.svc}'}
      require: [github]
    redact: {redactors: [email, ticket], max_bytes: 1MiB}
  - name: basic
    hosts: [raw.githubusercontent.com]
    ports: [80]
    inject: {basic: {username: u, password: '${secrets.github}'}}
agents: {default: {rules: [github, basic]}}
)");
  ASSERT_NE(p, nullptr);
  explain_request q;
  q.method = "GET";
  q.url = "https://api.github.com/user";
  const std::string text = explain(*p, q).text;
  EXPECT_NE(text.find("inject:  rule github sets header Authorization (secret github), query "
                      "parameter api_key (secret svc), requires the placeholder of github\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("redact:  responses are redacted with [email, ticket] and every secret's "
                      "value; text bodies are cut off after 1048576 bytes\n"),
            std::string::npos)
      << text;
  q.url = "http://raw.githubusercontent.com/x";
  const std::string basic = explain(*p, q).text;
  EXPECT_NE(basic.find("inject:  rule basic sets Basic credentials (secret github)\n"),
            std::string::npos)
      << basic;
  EXPECT_NE(basic.find("redact:  every secret's value is redacted from responses"),
            std::string::npos)
      << basic;
  for (const std::string& t : {text, basic}) {
    EXPECT_EQ(t.find(gh_value), std::string::npos);
    EXPECT_EQ(t.find(svc_value), std::string::npos);
    EXPECT_EQ(t.find(gh_fake), std::string::npos);
    EXPECT_EQ(t.find("${"), std::string::npos);
  }
  // Denied: nothing about credentials.
  q.url = "http://elsewhere.example/";
  EXPECT_EQ(explain(*p, q).text.find("inject:"), std::string::npos);
}

}  // namespace
}  // namespace airlock::policy
