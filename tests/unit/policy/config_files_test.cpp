#include "policy/loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace airlock::policy {
namespace {

std::vector<std::filesystem::path> yaml_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string dump(const load_result& r) {
  std::string out;
  for (const auto& e : r.errors)
    out += e.to_string() + "\n";
  return out;
}

// Examples that cannot rot: every file in config/ loads.
TEST(ConfigFiles, EveryExampleLoads) {
  const auto files = yaml_files(AIRLOCK_CONFIG_DIR);
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    const auto r = load_file(f.string());
    EXPECT_TRUE(r.ok()) << dump(r);
    if (r.ok()) {
      EXPECT_FALSE(r.policy->agents().empty()) << f;
      EXPECT_FALSE(r.policy->rules().empty()) << f;
    }
  }
}

TEST(ConfigFiles, ExampleIsWhatTheReadmeRuns) {
  const auto r = load_file(std::string(AIRLOCK_CONFIG_DIR) + "/example.yaml");
  ASSERT_TRUE(r.ok()) << dump(r);
  const auto& m = r.policy->model();
  EXPECT_EQ(m.listen.proxy, "127.0.0.1:3128");
  EXPECT_EQ(m.listen.admin, "127.0.0.1:9464");
  EXPECT_EQ(m.audit.path, "-");
  EXPECT_NE(r.policy->find_agent("default"), nullptr);
  const auto* coder = r.policy->find_agent("coder");
  ASSERT_NE(coder, nullptr);
  EXPECT_EQ(coder->token_sha256.size(), 64u);
  // No rule of the example needs interception (the CA is optional).
  for (const auto& rule : r.policy->rules())
    EXPECT_FALSE(rule.inspect) << rule.name;
}

// tests/data/policies: valid-*.yaml must load, invalid-*.yaml must not.
TEST(ConfigFiles, TestPolicies) {
  for (const auto& f : yaml_files(AIRLOCK_POLICY_DATA_DIR)) {
    const auto name = f.filename().string();
    const auto r = load_file(f.string());
    if (name.starts_with("valid")) {
      EXPECT_TRUE(r.ok()) << dump(r);
    } else if (name.starts_with("invalid")) {
      EXPECT_FALSE(r.ok()) << name;
    }
  }
}

}  // namespace
}  // namespace airlock::policy
