// A secret's value must appear in no error, warning, explanation or log line, whatever goes
// wrong. Every test here loads a policy whose secret holds a marker string, drives one error
// path (or a successful load and `airlock explain`), and looks for the marker, and for a
// distinctive part of it, in everything the policy component produced, including stderr.
#include "policy/loader.hpp"

#include "policy/explain.hpp"
#include "policy/snapshot.hpp"
#include "secret_test_util.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::policy {
namespace {

using test::scoped_env;
using test::scratch_dir;

// 40 bytes, prefix "mk-" then a part that must never be seen.
const std::string marker = "mk-AIRLOCKMARKERQ7x9Zk2LmP4vN8wB3tY6hJ0a";
const std::string marker_core = "MARKERQ7x9Zk";

// Everything a load produces that could end up in a terminal, a log or GET /policy.
std::string everything(const load_result& r) {
  std::string out;
  for (const auto& e : r.errors)
    out += e.to_string() + "\n";
  for (const auto& w : r.warnings)
    out += w.to_string() + "\n";
  return out;
}

void expect_clean(const std::string& text, const std::string& what) {
  EXPECT_EQ(text.find(marker), std::string::npos) << what << ":\n" << text;
  EXPECT_EQ(text.find(marker_core), std::string::npos) << what << ":\n" << text;
}

class SecretLeak : public ::testing::Test {
 protected:
  void SetUp() override { ::testing::internal::CaptureStderr(); }
  void TearDown() override {
    const std::string err = ::testing::internal::GetCapturedStderr();
    expect_clean(err, "stderr");
  }
  // Loads `yaml` from a file in the scratch folder; it must fail, and say nothing secret.
  load_result must_fail(const std::string& yaml, std::string_view expect_key) {
    auto r = dir_.load(yaml);
    EXPECT_FALSE(r.ok());
    bool found = false;
    for (const auto& e : r.errors)
      found = found || e.key == expect_key;
    EXPECT_TRUE(found) << expect_key << " in:\n" << everything(r);
    expect_clean(everything(r), yaml);
    return r;
  }
  scratch_dir dir_;
};

TEST_F(SecretLeak, PlaceholderErrors) {
  scoped_env e("AIRLOCK_TEST_MARK", marker);
  const std::string head = "secrets:\n  m:\n    env: AIRLOCK_TEST_MARK\n    hosts: [a.example]\n";
  std::string near = marker;
  near[20] = '_';
  std::string prefix_wrong = marker;
  prefix_wrong[0] = 'x';
  for (const std::string& placeholder :
       {marker,                                          // the value itself
        near,                                            // one character off
        prefix_wrong,                                    // right characters, wrong prefix
        marker + "x",                                    // one longer
        marker.substr(0, 39),                            // one shorter
        marker.substr(0, 20) + " " + marker.substr(21),  // a space
        "mk-" + std::string(37, 'x')}) {                 // fine on its own, see below
    auto r = dir_.load(head + "    placeholder: '" + placeholder + "'\n");
    expect_clean(everything(r), placeholder);
  }
  // Another secret's placeholder that carries this one's value, and a duplicate.
  scoped_env o("AIRLOCK_TEST_OTHER", "mk-" + std::string(37, 'o') + std::string(40, 'p'));
  must_fail(head +
                "  o:\n    env: AIRLOCK_TEST_OTHER\n    hosts: [b.example]\n"
                "    placeholder: 'mk-" +
                marker + std::string(37, 'y') + "'\n",
            "secrets.o.placeholder");
}

TEST_F(SecretLeak, ValueErrorsFromTheEnvironment) {
  // Values that are refused for their content: the message describes, never quotes.
  for (const std::string& bad :
       {marker + " ", " " + marker, marker + "\nsecond line", marker + "\x01" + "x",
        marker.substr(0, 7), std::string(20000, 'M') + marker}) {
    scoped_env e("AIRLOCK_TEST_MARK", bad);
    must_fail("secrets:\n  m: {env: AIRLOCK_TEST_MARK}\n", "secrets.m.env");
  }
}

TEST_F(SecretLeak, ValueErrorsFromFiles) {
  for (const std::string& bad : {marker + " \n", "\t" + marker, marker + "\n" + marker,
                                 marker + "\x7f", std::string(16385, 'M') + marker}) {
    dir_.write("m", bad);
    must_fail("secrets:\n  m: {file: m}\n", "secrets.m.file");
  }
  // Unreadable and odd files name the path only.
  dir_.write("m", marker, 0644);
  auto warned = dir_.load("secrets:\n  m: {file: m}\n");
  EXPECT_TRUE(warned.ok());
  EXPECT_EQ(warned.warnings.size(), 1u);
  expect_clean(everything(warned), "warning");
}

TEST_F(SecretLeak, ErrorsElsewhereInAPolicyWithSecrets) {
  // A valid secret next to every other kind of mistake.
  scoped_env e("AIRLOCK_TEST_MARK", marker);
  dir_.write("m", marker);
  auto r = must_fail(
      "secrets:\n"
      "  m: {env: AIRLOCK_TEST_MARK, placeholder: 'mk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',"
      " hosts: ['*.a.example', 'b*']}\n"
      "  f: {file: m, env: AIRLOCK_TEST_MARK}\n"
      "  g: {file: m, unknown: 1}\n"
      "redactors:\n"
      "  - {name: email, pattern: 'a(b', replace: \"x\\ny\"}\n"
      "agents:\n"
      "  default: {rules: [nope]}\n"
      "rules:\n"
      "  - {name: r, hosts: [a.example], inject: {}, redact: [m]}\n",
      "secrets.m.hosts[1]");
  EXPECT_GE(r.errors.size(), 7u) << everything(r);
}

TEST_F(SecretLeak, ExplainAndModelOfALoadedPolicy) {
  scoped_env e("AIRLOCK_TEST_MARK", marker);
  dir_.write("m", marker + "\n");
  auto r = dir_.load(
      "secrets:\n"
      "  m: {env: AIRLOCK_TEST_MARK, placeholder: 'mk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',"
      " hosts: [api.example]}\n"
      "  f: {file: m}\n"
      "redactors:\n"
      "  - {name: mine, pattern: 'mk-[A-Za-z0-9]{37}'}\n"
      "agents:\n"
      "  default: {rules: [api]}\n"
      "rules:\n"
      "  - {name: api, hosts: [api.example], ports: [80], methods: [GET]}\n");
  ASSERT_TRUE(r.ok()) << everything(r);
  expect_clean(everything(r), "warnings");
  ASSERT_EQ(r.policy->find_secret("m")->value.reveal(), marker);
  ASSERT_EQ(r.policy->find_secret("f")->value.reveal(), marker);
  for (const char* url :
       {"http://api.example/x", "http://api.example/x?token=1", "https://api.example/",
        "http://other.example/", "https://api.example:8443/"}) {
    for (const char* method : {"GET", "POST", "CONNECT"}) {
      explain_request q;
      q.method = method;
      q.url = url;
      expect_clean(explain(*r.policy, q).text, url);
      q.agent = "nobody";
      expect_clean(explain(*r.policy, q).text, url);
    }
  }
  // What the proxy may show of a policy: its model (sources, placeholders), never values.
  const auto& m = r.policy->model();
  for (const auto& s : m.secrets) {
    expect_clean(s.name + s.env + s.file + s.placeholder, "model");
    for (const auto& h : s.hosts)
      expect_clean(h, "model");
  }
  for (const auto& s : r.policy->secrets()) {
    expect_clean(s.name + s.origin + s.placeholder + s.value.to_string(), "compiled");
    expect_clean(::testing::PrintToString(s.value), "gtest printer");
  }
}

TEST_F(SecretLeak, InjectAndRedactErrors) {
  // The value pasted where a template, a reference, a header or parameter name, a required
  // secret or a redactor name belongs, next to a secret that holds it. Also the placeholder.
  scoped_env e("AIRLOCK_TEST_MARK", marker);
  const std::string placeholder = "mk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
  const std::string head =
      "secrets:\n"
      "  m: {env: AIRLOCK_TEST_MARK, placeholder: '" +
      placeholder +
      "', hosts: [api.example]}\n"
      "rules:\n"
      "  - name: r\n"
      "    hosts: [api.example, other.example]\n"
      "    ports: [80]\n";
  const std::pair<std::string, std::string> cases[] = {
      {"    inject: {headers: {Authorization: 'Bearer " + marker + "'}}\n",
       "rules[0].inject.headers.Authorization"},
      {"    inject: {query: {k: 'a" + marker + "b'}}\n", "rules[0].inject.query.k"},
      {"    inject: {basic: {username: u, password: '" + marker + "'}}\n",
       "rules[0].inject.basic.password"},
      {"    inject: {headers: {A: '${secrets." + marker + "}'}}\n", "rules[0].inject.headers.A"},
      {"    inject: {headers: {A: '${secrets." + placeholder + "}'}}\n",
       "rules[0].inject.headers.A"},
      {"    inject: {headers: {A: '${" + marker + "}'}}\n", "rules[0].inject.headers.A"},
      {"    inject: {headers: {A: 'x${" + marker + "'}}\n", "rules[0].inject.headers.A"},
      {"    inject: {headers: {A: \"" + marker + "\\r\\n\"}}\n", "rules[0].inject.headers.A"},
      {"    inject: {require: ['" + marker + "']}\n", "rules[0].inject.require[0]"},
      {"    inject: {require: ['" + placeholder + "']}\n", "rules[0].inject.require[0]"},
      {"    redact: ['" + marker + "']\n", "rules[0].redact[0]"},
      {"    redact: [email, '" + placeholder + "', '" + placeholder + "']\n", "rules[0].redact[1]"},
      {"    redact: {redactors: ['x" + marker + "']}\n", "rules[0].redact.redactors[0]"},
      // The binding error names the secret and the host only.
      {"    inject: {headers: {Authorization: 'Bearer ${secrets.m}'}}\n", "rules[0].inject"},
  };
  for (const auto& [rule, key] : cases) {
    auto r = must_fail(head + rule, key);
    // The placeholder is no more shown than the value.
    for (const auto& err : r.errors)
      EXPECT_EQ(err.to_string().find(placeholder.substr(3)), std::string::npos) << rule;
  }
}

TEST_F(SecretLeak, ExplainOfARuleThatInjects) {
  scoped_env e("AIRLOCK_TEST_MARK", marker);
  auto r = dir_.load(
      "secrets:\n"
      "  m: {env: AIRLOCK_TEST_MARK, placeholder: 'mk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',"
      " hosts: [api.example]}\n"
      "agents:\n"
      "  default: {rules: [api]}\n"
      "rules:\n"
      "  - name: api\n"
      "    hosts: [api.example]\n"
      "    ports: [80]\n"
      "    inject:\n"
      "      headers: {Authorization: 'Bearer ${secrets.m}'}\n"
      "      query: {key: '${secrets.m}'}\n"
      "      basic: {username: 'u', password: '${secrets.m}'}\n"
      "      require: [m]\n"
      "    redact: [email]\n");
  ASSERT_FALSE(r.ok());  // Authorization and basic together
  r = dir_.load(
      "secrets:\n"
      "  m: {env: AIRLOCK_TEST_MARK, placeholder: 'mk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',"
      " hosts: [api.example]}\n"
      "agents:\n"
      "  default: {rules: [api]}\n"
      "rules:\n"
      "  - name: api\n"
      "    hosts: [api.example]\n"
      "    ports: [80]\n"
      "    inject:\n"
      "      headers: {X-Key: 'Bearer ${secrets.m}'}\n"
      "      query: {key: '${secrets.m}'}\n"
      "      basic: {username: 'u', password: '${secrets.m}'}\n"
      "      require: [m]\n"
      "    redact: [email]\n");
  ASSERT_TRUE(r.ok()) << everything(r);
  explain_request q;
  q.method = "GET";
  q.url = "http://api.example/x";
  const std::string text = explain(*r.policy, q).text;
  EXPECT_NE(text.find("inject:  rule api sets header X-Key (secret m)"), std::string::npos) << text;
  expect_clean(text, "explain");
  EXPECT_EQ(text.find("mk-xxxx"), std::string::npos) << text;  // nor the placeholder
}

}  // namespace
}  // namespace airlock::policy
