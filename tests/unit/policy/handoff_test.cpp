#include "policy/handoff.hpp"

#include "policy/loader.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

TEST(Handoff, SecretFilesHiddenPlaceholdersInTheirVariablesNoValueRead) {
  // Neither the variable nor the file exists: the launcher loads without reading values.
  load_options options;
  options.read_secrets = false;
  auto r = load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
secrets:
  gh: {env: AIRLOCK_HANDOFF_UNSET_GH, placeholder: 'ghp_PLACEHOLDER0000000000000', hosts: [api.github.com]}
  plain: {env: AIRLOCK_HANDOFF_UNSET_PLAIN}
  svc: {file: /nonexistent/airlock/svc.key, placeholder: 'svc_PLACEHOLDER000', hosts: [svc.example]}
agents:
  default: {rules: []}
rules: []
)",
                       "/etc/airlock/policy.yaml", options);
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  ASSERT_TRUE(r.policy);
  const auto h = handoff_for_agent(*r.policy);
  ASSERT_EQ(h.hidden.size(), 1u);
  EXPECT_EQ(h.hidden[0].path, "/nonexistent/airlock/svc.key");
  EXPECT_EQ(h.hidden[0].why, "secret svc");
  EXPECT_TRUE(h.hidden[0].secret);
  ASSERT_EQ(h.env.size(), 1u);
  EXPECT_EQ(h.env[0].first, "AIRLOCK_HANDOFF_UNSET_GH");
  EXPECT_EQ(h.env[0].second, "ghp_PLACEHOLDER0000000000000");
  // A secret variable without a placeholder is removed, not passed on in clear.
  EXPECT_EQ(h.env_removed, std::vector<std::string>{"AIRLOCK_HANDOFF_UNSET_PLAIN"});
}

// The CA key is hidden, and (a secret too) not even checked for readability. (The certificate
// must be a readable regular file: any will do for this check.)
TEST(Handoff, TheCaKeyIsHidden) {
  load_options options;
  options.read_secrets = false;
  auto r = load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
tls: {ca_cert: /etc/passwd, ca_key: /srv/airlock/ca.key}
agents:
  default: {rules: []}
rules: []
)",
                       "policy.yaml", options);
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  ASSERT_TRUE(r.policy);
  const auto h = handoff_for_agent(*r.policy);
  ASSERT_EQ(h.hidden.size(), 1u);
  EXPECT_EQ(h.hidden[0].path, "/srv/airlock/ca.key");
  EXPECT_TRUE(h.hidden[0].secret);
}

// The audit log is the proxy's, not the agent's: hidden (by directory where possible).
TEST(Handoff, TheAuditLogIsHidden) {
  load_options options;
  options.read_secrets = false;
  for (auto [path, hidden] : std::vector<std::pair<std::string, bool>>{
           {"audit.jsonl", true}, {"'-'", false}, {"'off'", false}}) {
    auto r = load_string("listen: {proxy: 127.0.0.1:0, admin: ''}\naudit: {path: " + path +
                             "}\nagents:\n  default: {rules: []}\nrules: []\n",
                         "/srv/airlock/policy.yaml", options);
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    const auto h = handoff_for_agent(*r.policy);
    ASSERT_EQ(h.hidden.size(), hidden ? 1u : 0u) << path;
    if (!hidden) continue;
    EXPECT_EQ(h.hidden[0].path, "/srv/airlock/audit.jsonl");
    EXPECT_FALSE(h.hidden[0].secret);
  }
}

}  // namespace
}  // namespace airlock::policy
