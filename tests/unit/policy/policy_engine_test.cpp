// The policy's side of redaction against the engine that will use it (src/filters/redaction):
// what the policy accepts, the engine builds, and redacts as the policy documents it.
#include "filters/redaction/policy_redactors.hpp"

#include "core/str_cat.hpp"
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "policy/loader.hpp"
#include "policy/redactor_names.hpp"
#include "secret_test_util.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::policy {
namespace {

namespace redaction = filters::redaction;
using test::dump;
using test::scoped_env;
using test::scratch_dir;

TEST(PolicyEngine, BuiltinNamesAgree) {
  const auto policy_names = builtin_redactor_names();
  const auto engine_names = redaction::builtin_names();
  EXPECT_EQ(std::vector<std::string_view>(policy_names.begin(), policy_names.end()),
            std::vector<std::string_view>(engine_names.begin(), engine_names.end()));
}

TEST(PolicyEngine, SnapshotBuildsAnEngine) {
  scoped_env e("AIRLOCK_TEST_GH", "ghp_EngineTestValue0123456789abcdefABCDEF");
  scratch_dir d;
  d.write("slack", "xoxb-1111-2222-EngineFileValue\n");
  auto r = d.load(R"(secrets:
  github: {env: AIRLOCK_TEST_GH}
  slack: {file: slack}
redactors:
  - {name: internal-id, pattern: 'INT-[0-9]{6}'}
  - {name: session, pattern: 'session=(?P<redact>[A-Za-z0-9]{16,64})', replace: '***'}
  - {name: ci, pattern: '(?i)x-internal-[a-f0-9]{8}'}
  - {name: word, pattern: '\bsecretword\b'}
rules:
  - {name: r, hosts: [a.example], ports: [80], redact: [internal-id, session, ci, word, email]}
)");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const auto custom = redaction::custom_redactors(*r.policy);
  ASSERT_EQ(custom.size(), 4u);
  // A rule's `redact: [...]`: custom names and built-ins together.
  const std::vector<std::string>& names = r.policy->rules()[0].redact.redactors;
  ASSERT_EQ(names.size(), 5u);
  auto resolved = redaction::resolve_redactors(names, custom);
  ASSERT_TRUE(resolved.errors.empty());
  auto built =
      redaction::engine::build(std::move(resolved.specs), redaction::literal_secrets(*r.policy));
  ASSERT_TRUE(built.errors.empty()) << built.errors[0];
  const auto& engine = *built.compiled;
  redaction::hit_counts hits;
  const std::string out = engine.redact(
      "id INT-123456 session=abcdefABCDEF012345 X-INTERNAL-deadbeef secretword secretwords "
      "bob@example.com token ghp_EngineTestValue0123456789abcdefABCDEF and "
      "xoxb-1111-2222-EngineFileValue.",
      &hits);
  EXPECT_EQ(out,
            "id [REDACTED:internal-id] session=*** [REDACTED:ci] [REDACTED:word] secretwords "
            "[REDACTED:email] token [REDACTED:secret:github] and [REDACTED:secret:slack].");
  const auto named = engine.named(hits);
  EXPECT_EQ(named.size(), 7u);
}

TEST(PolicyEngine, WhatThePolicyAcceptsTheEngineBuilds) {
  // Patterns at the edges of what the policy allows, each alone in an engine.
  for (const char* p :
       {"a", "(?i)token", "[\\x00-\\x7f]{3}", "\\ba\\b", "^#.*", "(?m)^key:", "caf\xc3\xa9",
        "x=(?P<redact>[^&]{8,})", "(?s)BEGIN.{0,100}END", "\\p{Greek}+", "[[:alpha:]]+z"}) {
    const auto r =
        load_string(core::str_cat("redactors:\n  - {name: x, pattern: '", p, "'}\n"), "p.yaml");
    ASSERT_TRUE(r.ok()) << p << dump(r.errors);
    auto built = redaction::engine::build(redaction::custom_redactors(*r.policy), {});
    EXPECT_TRUE(built.errors.empty()) << p << ": " << (built.errors.empty() ? "" : built.errors[0]);
  }
}

}  // namespace
}  // namespace airlock::policy
