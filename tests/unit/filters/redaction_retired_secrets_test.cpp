#include "filters/redaction/retired_secrets.hpp"

#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

// The values reloads rotated out, as the next engines get them: kept for a day, at most four
// per secret, never one in force again.
namespace airlock::filters::redaction {
namespace {

using namespace std::chrono_literals;

// A snapshot whose secrets `alpha` and (when `with_beta`) `beta` have these values.
std::shared_ptr<const policy::snapshot> policy_with(const std::string& alpha,
                                                    const std::string& beta = "",
                                                    bool with_beta = true) {
  ::setenv("AIRLOCK_TEST_RETIRED_A", alpha.c_str(), 1);
  ::setenv("AIRLOCK_TEST_RETIRED_B", beta.c_str(), 1);
  std::string yaml = R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
secrets:
  alpha: {env: AIRLOCK_TEST_RETIRED_A}
)";
  if (with_beta) yaml += "  beta: {env: AIRLOCK_TEST_RETIRED_B}\n";
  yaml += R"(
agents:
  default: {rules: [api]}
rules:
  - {name: api, hosts: [api.example.com], ports: [443]}
)";
  auto r = policy::load_string(yaml, "retired.yaml");
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  return r.policy;
}

std::vector<std::string> values(const std::vector<literal_secret>& got) {
  std::vector<std::string> out;
  for (const auto& s : got)
    out.push_back(s.name + "=" + s.value);
  return out;
}

const std::string kA1 = "alpha-value-one-0123456789";
const std::string kA2 = "alpha-value-two-0123456789";
const std::string kB1 = "beta-value-one-01234567890";

TEST(RetiredSecrets, ARotatedValueIsKeptUnderItsNameAndTheFirstPolicyRetiresNothing) {
  retired_secrets r;
  const auto t0 = retired_secrets::clock::now();
  EXPECT_TRUE(r.carry(*policy_with(kA1, kB1), t0).empty());
  EXPECT_TRUE(r.carry(*policy_with(kA1, kB1), t0 + 1s).empty());  // unchanged: nothing retired
  EXPECT_EQ(values(r.carry(*policy_with(kA2, kB1), t0 + 2s)),
            (std::vector<std::string>{"alpha=" + kA1}));
  // Still there on the next reload, until a day has passed since the rotation.
  EXPECT_EQ(values(r.carry(*policy_with(kA2, kB1), t0 + 2s + 23h)),
            (std::vector<std::string>{"alpha=" + kA1}));
  EXPECT_TRUE(r.carry(*policy_with(kA2, kB1), t0 + 2s + 24h + 1s).empty());
}

TEST(RetiredSecrets, ASecretThePolicyNoLongerNamesIsRetiredToo) {
  retired_secrets r;
  const auto t0 = retired_secrets::clock::now();
  r.carry(*policy_with(kA1, kB1), t0);
  EXPECT_EQ(values(r.carry(*policy_with(kA1, "", false), t0 + 1s)),
            (std::vector<std::string>{"beta=" + kB1}));
}

TEST(RetiredSecrets, AValueInForceAgainIsNotRetiredAndNoneIsListedTwice) {
  retired_secrets r;
  const auto t0 = retired_secrets::clock::now();
  r.carry(*policy_with(kA1, kB1), t0);
  r.carry(*policy_with(kA2, kB1), t0 + 1s);
  // Rotated back: kA1 is current again, kA2 retired.
  EXPECT_EQ(values(r.carry(*policy_with(kA1, kB1), t0 + 2s)),
            (std::vector<std::string>{"alpha=" + kA2}));
  // The same value retired twice is listed once, with its newest retirement's time.
  EXPECT_EQ(values(r.carry(*policy_with(kA2, kB1), t0 + 3s)),
            (std::vector<std::string>{"alpha=" + kA1}));
}

TEST(RetiredSecrets, AtMostFourPerSecretTheNewestFirst) {
  retired_secrets r;
  const auto t0 = retired_secrets::clock::now();
  std::vector<std::string> expected;
  for (int i = 0; i < 7; ++i) {
    const std::string value = "alpha-rotation-" + std::to_string(i) + "-0123456789";
    const auto got = r.carry(*policy_with(value, kB1), t0 + std::chrono::seconds(i));
    if (i > 0)
      expected.insert(expected.begin(),
                      "alpha=alpha-rotation-" + std::to_string(i - 1) + "-0123456789");
    if (expected.size() > retired_secrets::per_secret) expected.pop_back();
    EXPECT_EQ(values(got), expected) << i;
  }
}

}  // namespace
}  // namespace airlock::filters::redaction
