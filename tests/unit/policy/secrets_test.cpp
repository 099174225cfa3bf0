#include "policy/secrets.hpp"

#include "core/str_cat.hpp"
#include "policy/loader.hpp"
#include "policy/secrets_compiler.hpp"
#include "policy/snapshot.hpp"
#include "secret_test_util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

namespace airlock::policy {
namespace {

using test::dump;
using test::scoped_env;
using test::scratch_dir;

constexpr std::string_view gh_value = "ghp_R3alT0kenValue0123456789abcdefABCDEF";  // 40 bytes
constexpr std::string_view gh_fake = "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";   // 40 bytes

// Exactly one error, at line:column, for key, whose message contains `message`.
void expect_one(const load_result& r, int line, int column, std::string_view key,
                std::string_view message) {
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].line, line) << dump(r.errors);
  EXPECT_EQ(r.errors[0].column, column) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, key) << dump(r.errors);
  EXPECT_NE(r.errors[0].message.find(message), std::string::npos) << dump(r.errors);
}

// ------------------------------------------------------------------------------ loading

TEST(Secrets, FromEnvironment) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  scratch_dir d;
  auto r = d.load("secrets:\n  github: {env: AIRLOCK_TEST_GH}\n");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << dump(r.warnings);
  ASSERT_EQ(r.policy->secrets().size(), 1u);
  const compiled_secret& s = r.policy->secrets()[0];
  EXPECT_EQ(s.name, "github");
  EXPECT_EQ(s.source, secret_source::env);
  EXPECT_EQ(s.origin, "AIRLOCK_TEST_GH");
  EXPECT_EQ(s.value.reveal(), gh_value);
  EXPECT_TRUE(s.placeholder.empty());
  EXPECT_TRUE(s.hosts.empty());
  EXPECT_EQ(r.policy->find_secret("github"), &s);
  EXPECT_EQ(r.policy->find_secret("gitlab"), nullptr);
  // The model says where the value comes from, never what it is.
  EXPECT_EQ(r.policy->model().secrets[0].env, "AIRLOCK_TEST_GH");
}

TEST(Secrets, FromFileRelativeToThePolicy) {
  scratch_dir d;
  d.write("run/secrets/gh", std::string(gh_value) + "\n");
  d.write("abs", "absolute-value-123");
  const std::string abs = (d.path() / "abs").string();
  auto r = d.load("secrets:\n  github: {file: run/secrets/gh}\n  other: {file: '" + abs + "'}\n");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const compiled_secret& s = *r.policy->find_secret("github");
  EXPECT_EQ(s.source, secret_source::file);
  EXPECT_EQ(s.origin, (d.path() / "run/secrets/gh").string());
  EXPECT_EQ(s.value.reveal(), gh_value);
  EXPECT_EQ(r.policy->find_secret("other")->value.reveal(), "absolute-value-123");
  EXPECT_EQ(r.policy->find_secret("other")->origin, abs);
}

TEST(Secrets, ReloadReadsRotatedValues) {
  scratch_dir d;
  d.write("gh", "first-value-0001\n");
  scoped_env e("AIRLOCK_TEST_ROTATE", "env-first-0001");
  const std::string yaml = "secrets:\n  f: {file: gh}\n  e: {env: AIRLOCK_TEST_ROTATE}\n";
  auto first = d.load(yaml);
  ASSERT_TRUE(first.ok()) << dump(first.errors);
  EXPECT_EQ(first.policy->find_secret("f")->value.reveal(), "first-value-0001");

  d.write("gh", "second-value-0002\n");
  ::setenv("AIRLOCK_TEST_ROTATE", "env-second-0002", 1);
  auto second = d.load(yaml);
  ASSERT_TRUE(second.ok()) << dump(second.errors);
  EXPECT_EQ(second.policy->find_secret("f")->value.reveal(), "second-value-0002");
  EXPECT_EQ(second.policy->find_secret("e")->value.reveal(), "env-second-0002");
  // The snapshot in force keeps its own values: requests in flight are not affected.
  EXPECT_EQ(first.policy->find_secret("f")->value.reveal(), "first-value-0001");
  EXPECT_EQ(first.policy->find_secret("e")->value.reveal(), "env-first-0001");
  EXPECT_FALSE(
      first.policy->find_secret("f")->value.same_as(second.policy->find_secret("f")->value));
  // The policy file did not change, so neither did its version.
  EXPECT_EQ(first.policy->version(), second.policy->version());

  // A rotation that breaks the secret is a failed reload (the caller keeps the old snapshot).
  std::filesystem::remove(d.path() / "gh");
  auto third = d.load(yaml);
  EXPECT_FALSE(third.ok());
  ASSERT_EQ(third.errors.size(), 1u) << dump(third.errors);
  EXPECT_EQ(third.errors[0].key, "secrets.f.file");
}

TEST(Secrets, PlaceholderAndHosts) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  auto r = load_string(
      "secrets:\n"
      "  github:\n"
      "    env: AIRLOCK_TEST_GH\n"
      "    placeholder: '" +
          std::string(gh_fake) +
          "'\n"
          "    hosts: [API.GitHub.com., '*.githubusercontent.com', 127.1, api.github.com]\n",
      "p.yaml");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const compiled_secret& s = r.policy->secrets()[0];
  EXPECT_EQ(s.placeholder, gh_fake);
  // Normalised, duplicates dropped.
  EXPECT_EQ(s.hosts,
            (std::vector<std::string>{"api.github.com", "*.githubusercontent.com", "127.0.0.1"}));
  EXPECT_EQ(r.policy->model().secrets[0].hosts[0], "api.github.com");
  auto host = [](std::string_view h) { return *net::normalize_host(h); };
  EXPECT_TRUE(s.bound_to(host("api.github.com")));
  EXPECT_TRUE(s.bound_to(host("API.GITHUB.COM.")));
  EXPECT_TRUE(s.bound_to(host("raw.githubusercontent.com")));
  EXPECT_TRUE(s.bound_to(host("a.b.githubusercontent.com")));
  EXPECT_FALSE(s.bound_to(host("githubusercontent.com")));  // the suffix itself
  EXPECT_FALSE(s.bound_to(host("evilgithubusercontent.com")));
  EXPECT_FALSE(s.bound_to(host("github.com")));
  EXPECT_FALSE(s.bound_to(host("api.github.com.evil.example")));
  EXPECT_TRUE(s.bound_to(host("127.0.0.1")));
  EXPECT_TRUE(s.bound_to(host("0x7f000001")));

  compiled_secret unbound;
  EXPECT_FALSE(unbound.bound_to(host("api.github.com")));
}

// swap_in: where on its hosts a placeholder becomes the value. Default [header, query].
TEST(Secrets, SwapInDefaultsAndPlaces) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  const std::string head = "secrets:\n  github:\n    env: AIRLOCK_TEST_GH\n    placeholder: '" +
                           std::string(gh_fake) + "'\n    hosts: [api.github.com]\n";
  auto r = load_string(head, "p.yaml");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const swap_places& d = r.policy->secrets()[0].swap_in;
  EXPECT_TRUE(d.any_header);
  EXPECT_TRUE(d.any_query);
  EXPECT_FALSE(d.path);
  EXPECT_FALSE(d.anywhere);

  r = load_string(head + "    swap_in: [path, 'header:X-Api-Key', 'query:key']\n", "p.yaml");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const swap_places& s = r.policy->secrets()[0].swap_in;
  EXPECT_TRUE(s.path);
  EXPECT_FALSE(s.any_header);
  EXPECT_FALSE(s.any_query);
  EXPECT_FALSE(s.anywhere);
  EXPECT_TRUE(s.header_allowed("x-api-key"));
  EXPECT_TRUE(s.header_allowed("X-API-KEY"));
  EXPECT_FALSE(s.header_allowed("authorization"));
  EXPECT_TRUE(s.param_allowed("key"));
  EXPECT_FALSE(s.param_allowed("Key"));
  EXPECT_FALSE(s.param_allowed("url"));

  r = load_string(head + "    swap_in: [anywhere]\n", "p.yaml");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_TRUE(r.policy->secrets()[0].swap_in.anywhere);
}

TEST(SecretErrors, SwapInUnknownPlaceNamesFileLineAndKey) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  const std::string head = "secrets:\n  github:\n    env: AIRLOCK_TEST_GH\n    placeholder: '" +
                           std::string(gh_fake) + "'\n    hosts: [api.github.com]\n";
  auto r = load_string(head + "    swap_in: [header, body]\n", "p.yaml");
  expect_one(r, 6, 23, "secrets.github.swap_in[1]", "not a place to swap the placeholder in");
  EXPECT_NE(r.errors[0].to_string().find("p.yaml:6:23: secrets.github.swap_in[1]"),
            std::string::npos)
      << dump(r.errors);
  expect_one(load_string(head + "    swap_in: ['header:']\n", "p.yaml"), 6, 15,
             "secrets.github.swap_in[0]", "header:NAME needs a header name");
  expect_one(load_string(head + "    swap_in: ['header:Proxy-Authorization']\n", "p.yaml"), 6, 15,
             "secrets.github.swap_in[0]", "never forwarded");
  expect_one(load_string(head + "    swap_in: ['query:']\n", "p.yaml"), 6, 15,
             "secrets.github.swap_in[0]", "query:NAME needs a parameter name");
  expect_one(load_string(head + "    swap_in: []\n", "p.yaml"), 6, 14, "secrets.github.swap_in",
             "must not be empty");
  expect_one(load_string(head + "    swap_in: path\n", "p.yaml"), 6, 14, "secrets.github.swap_in",
             "a list");
  expect_one(load_string("secrets:\n  s: {env: AIRLOCK_TEST_GH, swap_in: [path]}\n", "p.yaml"), 2,
             38, "secrets.s.swap_in", "set secrets.s.placeholder");
}

TEST(Secrets, WildcardNeverMatchesAnAddress) {
  compiled_secret s;
  s.hosts = {"*.0.0.1"};  // cannot be written in a policy; bound_to must still not match
  EXPECT_FALSE(s.bound_to(*net::normalize_host("127.0.0.1")));
}

TEST(Secrets, WorldReadableFileIsAWarningNotAnError) {
  scratch_dir d;
  d.write("gh", gh_value, 0644);
  auto r = d.load("# secrets\nsecrets:\n  github: {file: gh}\n");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  ASSERT_EQ(r.warnings.size(), 1u) << dump(r.warnings);
  const load_error& w = r.warnings[0];
  EXPECT_EQ(w.file, (d.path() / "policy.yaml").string());
  EXPECT_EQ(w.line, 3);
  EXPECT_EQ(w.column, 18);
  EXPECT_EQ(w.key, "secrets.github.file");
  EXPECT_NE(w.message.find("accessible by group or others (mode 0644)"), std::string::npos);
  // Warnings come with a failed load too.
  auto bad = d.load("secrets:\n  github: {file: gh}\nmode: nope\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.warnings.size(), 1u);
}

TEST(Secrets, ValidatingWithoutTheValues) {
  // CI checks a policy where the secrets are not available: load_options::read_secrets.
  ::unsetenv("AIRLOCK_TEST_UNSET");
  load_options o;
  o.read_secrets = false;
  const std::string yaml =
      "secrets:\n"
      "  a: {env: AIRLOCK_TEST_UNSET, placeholder: 'tok-short', hosts: [a.example]}\n"
      "  b: {file: /nonexistent/airlock/secret}\n";
  auto r = load_string(yaml, "p.yaml", o);
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_TRUE(r.policy->find_secret("a")->value.empty());
  EXPECT_EQ(r.policy->find_secret("a")->placeholder, "tok-short");
  EXPECT_EQ(r.policy->find_secret("b")->origin, "/nonexistent/airlock/secret");
  EXPECT_FALSE(load_string(yaml, "p.yaml").ok());  // the default reads them
  // What needs no value is still checked.
  auto bad = load_string(
      "secrets:\n"
      "  a: {env: 'A-B', placeholder: 'tok short', hosts: ['*']}\n"
      "  b: {file: ''}\n"
      "  c: {env: X, placeholder: 'tok-same'}\n",
      "p.yaml", o);
  ASSERT_EQ(bad.errors.size(), 5u) << dump(bad.errors);
  EXPECT_EQ(bad.errors[0].key, "secrets.a.env");
  EXPECT_EQ(bad.errors[1].key, "secrets.a.placeholder");
  EXPECT_EQ(bad.errors[2].key, "secrets.a.hosts[0]");
  EXPECT_EQ(bad.errors[3].key, "secrets.b.file");
  EXPECT_EQ(bad.errors[4].key, "secrets.c.placeholder");
}

TEST(Secrets, TestDataPolicies) {
  const std::string dir = AIRLOCK_POLICY_DATA_DIR;
  auto ok = load_file(dir + "/valid-secrets.yaml");
  ASSERT_TRUE(ok.ok()) << dump(ok.errors);
  const compiled_secret* s = ok.policy->find_secret("example");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->origin, dir + "/secrets/example-token");
  EXPECT_EQ(s->value.size(), 40u);
  EXPECT_EQ(ok.policy->redactors().size(), 2u);

  ::unsetenv("AIRLOCK_TEST_NEVER_SET_0b7c1e");
  auto bad = load_file(dir + "/invalid-secrets.yaml");
  EXPECT_FALSE(bad.ok());
  std::vector<std::string> keys;
  for (const auto& e : bad.errors) {
    keys.push_back(e.key);
    EXPECT_GT(e.line, 0) << e.to_string();
    EXPECT_EQ(e.file, dir + "/invalid-secrets.yaml");
    EXPECT_EQ(e.to_string().find("FAKE0example"), std::string::npos) << e.to_string();
  }
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "secrets.unset.env", "secrets.missing.file", "secrets.both.file",
                      "secrets.short-placeholder.placeholder", "redactors[0].name",
                      "redactors[1].pattern", "redactors[2].pattern"}));
}

// ------------------------------------------------------------------------------ errors

TEST(SecretErrors, MissingEnvironmentVariable) {
  ::unsetenv("AIRLOCK_TEST_UNSET");
  expect_one(load_string("secrets:\n  github: {env: AIRLOCK_TEST_UNSET}\n", "p.yaml"), 2, 17,
             "secrets.github.env", "environment variable 'AIRLOCK_TEST_UNSET' is not set");
  scoped_env e("AIRLOCK_TEST_EMPTY", "");
  auto r = load_string("secrets:\n  github:\n    env: AIRLOCK_TEST_EMPTY\n", "p.yaml");
  expect_one(r, 3, 10, "secrets.github.env", "environment variable 'AIRLOCK_TEST_EMPTY' is empty");
  EXPECT_EQ(r.errors[0].to_string(),
            "p.yaml:3:10: secrets.github.env: environment variable 'AIRLOCK_TEST_EMPTY' is empty");
}

TEST(SecretErrors, FileProblems) {
  scratch_dir d;
  d.write("empty", "\n");
  d.write("short", "1234567");
  d.write("dir/x", "value-12345678");
  auto r = d.load(
      "secrets:\n"
      "  a: {file: missing}\n"
      "  b: {file: empty}\n"
      "  c: {file: short}\n"
      "  d: {file: dir}\n"
      "  e: {file: ''}\n");
  ASSERT_EQ(r.errors.size(), 5u) << dump(r.errors);
  const std::string base = d.path().string();
  EXPECT_EQ(r.errors[0].key, "secrets.a.file");
  EXPECT_EQ(r.errors[0].message, "cannot read '" + base + "/missing': No such file or directory");
  EXPECT_EQ(r.errors[1].message, "'" + base + "/empty' is empty");
  EXPECT_NE(r.errors[2].message.find("holds 7 bytes; a secret needs at least 8"),
            std::string::npos);
  EXPECT_EQ(r.errors[3].message, "'" + base + "/dir' is a directory");
  EXPECT_EQ(r.errors[4].key, "secrets.e.file");
  EXPECT_EQ(r.errors[4].message, "must not be empty");
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.errors[i].line, i + 2);
    EXPECT_EQ(r.errors[i].column, 13);
    EXPECT_EQ(r.errors[i].file, base + "/policy.yaml");
  }
}

TEST(SecretErrors, SourceMustBeOneOfEnvOrFile) {
  expect_one(load_string("secrets:\n  gh: {hosts: [a.example]}\n", "p.yaml"), 2, 3, "secrets.gh",
             "needs env (a variable name) or file (a path)");
  expect_one(load_string("secrets:\n  gh: {env: X, file: y}\n", "p.yaml"), 2, 22, "secrets.gh.file",
             "give env or file, not both");
  expect_one(load_string("secrets:\n  gh: {}\n", "p.yaml"), 2, 3, "secrets.gh", "needs env");
  expect_one(load_string("secrets:\n  gh:\n", "p.yaml"), 2, 3, "secrets.gh",
             "expected a mapping with env or file, got nothing");
  // A misspelt key: one error, with a suggestion, not also "needs env or file".
  expect_one(load_string("secrets:\n  gh: {evn: X}\n", "p.yaml"), 2, 8, "secrets.gh.evn",
             "unknown key 'evn'; did you mean 'env'?");
  expect_one(load_string("secrets:\n  gh: {env: [X]}\n", "p.yaml"), 2, 13, "secrets.gh.env",
             "expected a string, got a list");
  expect_one(load_string("secrets: [gh]\n", "p.yaml"), 1, 10, "secrets",
             "expected a mapping of secret names, got a list");
}

TEST(SecretErrors, NamesAndDuplicates) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  expect_one(load_string("secrets:\n  'git hub': {env: AIRLOCK_TEST_GH}\n", "p.yaml"), 2, 3,
             "secrets.git hub", "invalid secret name 'git hub'");
  expect_one(load_string("secrets:\n  a.b: {env: AIRLOCK_TEST_GH}\n", "p.yaml"), 2, 3,
             "secrets.a.b", "invalid secret name 'a.b'");
  expect_one(
      load_string("secrets:\n  " + std::string(65, 'a') + ": {env: AIRLOCK_TEST_GH}\n", "p.yaml"),
      2, 3, "secrets." + std::string(65, 'a'), "at most 64");
  EXPECT_TRUE(
      load_string("secrets:\n  " + std::string(64, 'a') + ": {env: AIRLOCK_TEST_GH}\n", "p.yaml")
          .ok());
  expect_one(load_string("secrets:\n  gh: {env: AIRLOCK_TEST_GH}\n  gh: {env: AIRLOCK_TEST_GH}\n",
                         "p.yaml"),
             3, 3, "secrets.gh", "duplicate secret 'gh'");
}

TEST(SecretErrors, EnvironmentNameIsCheckedAndNotEchoed) {
  // Someone pasted the token where the variable's name goes: not echoed back.
  auto r = load_string("secrets:\n  gh: {env: 'ghp-pasted-token/value'}\n", "p.yaml");
  expect_one(r, 2, 13, "secrets.gh.env", "not a valid environment variable name");
  EXPECT_EQ(r.errors[0].message.find("pasted"), std::string::npos);
}

TEST(SecretErrors, ValuePastedAsANameIsHiddenInKeysAndMessages) {
  // The token pasted as an injected header's name and as a query parameter's name: the key the
  // error stands under would quote it; no error's key or message does.
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  auto r = load_string(
      core::str_cat("secrets:\n  gh: {env: AIRLOCK_TEST_GH}\n"
                    "rules:\n  - name: r\n    hosts: [api.example]\n"
                    "    inspect: true\n    inject:\n      headers:\n        '",
                    gh_value, "': '${secrets.nope}'\n        'Proxy-", gh_value,
                    "': x\n      query:\n        '", gh_value, "': '${secrets.nope}'\n"),
      "p.yaml");
  ASSERT_GE(r.errors.size(), 3u) << dump(r.errors);
  for (const auto& err : r.errors) {
    EXPECT_EQ(err.to_string().find(gh_value), std::string::npos) << err.to_string();
    EXPECT_EQ(err.to_string().find(gh_value.substr(4)), std::string::npos) << err.to_string();
  }
  EXPECT_NE(dump(r.errors).find("(the value of secret gh)"), std::string::npos) << dump(r.errors);
}

TEST(SecretErrors, PasswordPastedAsTheStoresSecretNameIsNotEchoed) {
  auto r = load_string(
      "state:\n  backend: redis\n  address: 127.0.0.1:6379\n"
      "  password_secret: 'Sup3r/S3cret+pw'\n",
      "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(dump(r.errors).find("S3cret"), std::string::npos) << dump(r.errors);
  EXPECT_NE(dump(r.errors).find("state.password_secret"), std::string::npos) << dump(r.errors);
}

TEST(SecretErrors, Hosts) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  auto r = load_string(
      "secrets:\n"
      "  gh:\n"
      "    env: AIRLOCK_TEST_GH\n"
      "    hosts: [ok.example, 'a*.example', '*.10.0.0.1', 'bad host', 7]\n",
      "p.yaml");
  ASSERT_EQ(r.errors.size(), 3u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "secrets.gh.hosts[1]");
  EXPECT_EQ(r.errors[0].column, 25);
  EXPECT_NE(r.errors[0].message.find("'*' is only allowed as a leading '*.'"), std::string::npos);
  EXPECT_EQ(r.errors[1].key, "secrets.gh.hosts[2]");
  EXPECT_NE(r.errors[1].message.find("needs a DNS name"), std::string::npos);
  EXPECT_EQ(r.errors[2].key, "secrets.gh.hosts[3]");
  EXPECT_EQ(r.errors[2].message, "invalid host 'bad host'");
  expect_one(load_string("secrets:\n  gh: {env: AIRLOCK_TEST_GH, hosts: []}\n", "p.yaml"), 2, 37,
             "secrets.gh.hosts", "must not be empty");
}

TEST(SecretErrors, Placeholder) {
  scoped_env e("AIRLOCK_TEST_GH", std::string(gh_value));
  auto one = [](std::string_view placeholder, std::string_view hosts = "[api.github.com]") {
    return load_string(
        core::str_cat("secrets:\n  gh:\n    env: AIRLOCK_TEST_GH\n", "    placeholder: '",
                      placeholder, "'\n",
                      hosts.empty() ? "" : core::str_cat("    hosts: ", hosts, "\n")),
        "p.yaml");
  };
  ASSERT_TRUE(one(gh_fake).ok());
  expect_one(one(gh_fake, ""), 4, 18, "secrets.gh.placeholder", "a placeholder needs hosts");
  expect_one(one(""), 4, 18, "secrets.gh.placeholder", "must not be empty");
  expect_one(one("ghp_xxx"), 4, 18, "secrets.gh.placeholder",
             "is 7 characters long, the value 40: a placeholder has the value's length");
  expect_one(one(gh_value), 4, 18, "secrets.gh.placeholder", "is the value itself");
  expect_one(one("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), 4, 18, "secrets.gh.placeholder",
             "must start with the value's prefix (its first 4 characters");
  expect_one(one("ghp_xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxxxx"), 4, 18, "secrets.gh.placeholder",
             "printable ASCII without spaces");
  // The value with a few characters changed gives it away.
  std::string near(gh_value);
  near[10] = near[20] = near[30] = '_';
  expect_one(one(near), 4, 18, "secrets.gh.placeholder",
             "has 33 characters equal to the value's at the same position past its prefix (at "
             "most 9): it would give the value away");
}

TEST(SecretErrors, PlaceholdersBetweenSecrets) {
  scoped_env a("AIRLOCK_TEST_A", "tok-AAAA0123456789xyz");
  scoped_env b("AIRLOCK_TEST_B", "tok-BBBB9876543210zyx");
  // b's placeholder is a's value (and a fine placeholder for b otherwise): handing it to the
  // agent would hand over secret a. c's placeholder is a's: which secret would it stand for?
  auto r = load_string(
      "secrets:\n"
      "  a: {env: AIRLOCK_TEST_A, placeholder: 'tok-xxxxxxxxxxxxxxxxx', hosts: [a.example]}\n"
      "  b: {env: AIRLOCK_TEST_B, placeholder: 'tok-AAAA0123456789xyz', hosts: [b.example]}\n"
      "  c: {env: AIRLOCK_TEST_B, placeholder: 'tok-xxxxxxxxxxxxxxxxx', hosts: [c.example]}\n",
      "p.yaml");
  ASSERT_EQ(r.errors.size(), 2u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "secrets.b.placeholder");
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].message,
            "holds the value of secret 'a': the agent would be given that secret");
  EXPECT_EQ(r.errors[1].key, "secrets.c.placeholder");
  EXPECT_EQ(r.errors[1].message,
            "same placeholder as secret 'a': each placeholder must stand for one secret");
  // A longer placeholder that merely contains another secret's value is caught as well.
  scoped_env l("AIRLOCK_TEST_L", "tok-LLLLLLLLLLLLLLLLLLLLLLLLLL0");
  auto r2 = load_string(
      "secrets:\n"
      "  a: {env: AIRLOCK_TEST_A}\n"
      "  l: {env: AIRLOCK_TEST_L, placeholder: 'tok-xtok-AAAA0123456789xyzxxxxx', hosts: [l.x]}\n",
      "p.yaml");
  ASSERT_EQ(r2.errors.size(), 1u) << dump(r2.errors);
  EXPECT_EQ(r2.errors[0].message,
            "holds the value of secret 'a': the agent would be given that secret");
}

TEST(SecretErrors, EveryErrorAtOnce) {
  ::unsetenv("AIRLOCK_TEST_UNSET");
  auto r = load_string(
      "secrets:\n"
      "  a: {env: AIRLOCK_TEST_UNSET}\n"
      "  b: {file: /nonexistent/airlock/secret}\n"
      "  c: {}\n"
      "agents:\n"
      "  default: {rules: [nope]}\n",
      "p.yaml");
  ASSERT_EQ(r.errors.size(), 4u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "secrets.a.env");
  EXPECT_EQ(r.errors[1].key, "secrets.b.file");
  EXPECT_EQ(r.errors[2].key, "secrets.c");
  EXPECT_EQ(r.errors[3].key, "agents.default.rules[0]");
}

// ------------------------------------------------------------------------------ placeholder rules

TEST(SecretPrefix, WordsBeforeTheRandomPart) {
  EXPECT_EQ(secret_prefix_length("ghp_R3alT0kenValue0123456789abcdefABCDEF"), 4u);
  EXPECT_EQ(secret_prefix_length("github_pat_11ABCDEFG0abcdefghij_klmnopqrstuvwxyz"), 11u);
  EXPECT_EQ(secret_prefix_length("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz"), 13u);
  EXPECT_EQ(secret_prefix_length("sk-proj-Ab_Cd-EfGhIjKlMnOp"), 8u);
  EXPECT_EQ(secret_prefix_length("xoxb-123456789012-1234567890123-AbCdEf"), 5u);
  EXPECT_EQ(secret_prefix_length("glpat-AbCdEfGhIjKlMnOpQrSt"), 6u);
  EXPECT_EQ(secret_prefix_length("AKIAIOSFODNN7EXAMPLE"), 0u);
  EXPECT_EQ(secret_prefix_length("AIzaSyA-0123456789abcdefghijklmnopqrstu"), 0u);
  EXPECT_EQ(secret_prefix_length("0123456789abcdef"), 0u);
  EXPECT_EQ(secret_prefix_length("abcdefg_hij"), 0u);  // a 7-letter word is not a prefix word
  // Never more than half of the value.
  EXPECT_EQ(secret_prefix_length("ab-cd-ef-gh"), 3u);
  EXPECT_EQ(secret_prefix_length("a-b-c-d-e-f-g-h-"), 8u);
  EXPECT_EQ(secret_prefix_length(""), 0u);
  EXPECT_EQ(secret_prefix_length("-"), 0u);
  EXPECT_EQ(secret_prefix_length("__"), 0u);
}

TEST(SecretPrefix, PlaceholderProblems) {
  EXPECT_EQ(placeholder_problem(gh_fake, gh_value), "");
  EXPECT_EQ(placeholder_problem("AKIAXXXXXXXXXXXXXXXX", "AKIAIOSFODNN7EXAMPLE"), "");
  EXPECT_EQ(placeholder_problem("00000000000000000000", "AKIAIOSFODNN7EXAMPLE"), "");
  // Short values: at least 6 coincidences are always allowed.
  EXPECT_EQ(placeholder_problem("abcdefxx", "abcdefgh"), "");
  EXPECT_NE(placeholder_problem("abcdefgx", "abcdefgh"), "");
  // A quarter past the prefix: 36 random characters -> 9.
  std::string p(gh_fake);
  for (int i = 0; i < 9; ++i)
    p[4 + i] = gh_value[4 + i];
  EXPECT_EQ(placeholder_problem(p, gh_value), "");
  p[13] = gh_value[13];
  EXPECT_NE(placeholder_problem(p, gh_value), "");
  EXPECT_NE(placeholder_problem(std::string("ghp_") + std::string(35, 'x') + "\x80", gh_value), "");
}

}  // namespace
}  // namespace airlock::policy
