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
  EXPECT_EQ(h.hidden, std::vector<std::string>{"/nonexistent/airlock/svc.key"});
  ASSERT_EQ(h.env.size(), 1u);
  EXPECT_EQ(h.env[0].first, "AIRLOCK_HANDOFF_UNSET_GH");
  EXPECT_EQ(h.env[0].second, "ghp_PLACEHOLDER0000000000000");
}

// The CA key is hidden, and (a secret too) not even checked for readability.
TEST(Handoff, TheCaKeyIsHidden) {
  load_options options;
  options.read_secrets = false;
  auto r = load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
tls: {ca_cert: /dev/null, ca_key: /srv/airlock/ca.key}
agents:
  default: {rules: []}
rules: []
)",
                       "policy.yaml", options);
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  ASSERT_TRUE(r.policy);
  EXPECT_EQ(handoff_for_agent(*r.policy).hidden, std::vector<std::string>{"/srv/airlock/ca.key"});
}

}  // namespace
}  // namespace airlock::policy
