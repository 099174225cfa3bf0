// The policy's held requests: `approvals:`, a rule's `ask`, and `include:` (the overlay file of
// permanent approvals and any other included fragment).
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace airlock::policy {
namespace {

using namespace std::chrono_literals;

std::string all_errors(const load_result& r) {
  std::string out;
  for (const auto& e : r.errors)
    out += e.to_string() + "\n";
  return out;
}

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    char tmpl[] = "/tmp/airlock-approvals-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

TEST(PolicyApprovals, Defaults) {
  auto p = test::must_load("mode: enforce\n");
  ASSERT_TRUE(p);
  const auto& a = p->model().approvals;
  EXPECT_FALSE(a.ask_unmatched);
  EXPECT_EQ(a.timeout, 120s);
  EXPECT_EQ(a.max_held_per_agent, 8u);
  EXPECT_EQ(a.max_held_total, 256u);
  EXPECT_TRUE(a.overlay.empty());
}

TEST(PolicyApprovals, EveryKeyAndAsk) {
  auto p = test::must_load(
      "approvals: {ask_unmatched: true, timeout: 30s, max_held_per_agent: 2,\n"
      "            max_held_total: 9}\n"
      "agents: {default: {rules: [a, b, c]}}\n"
      "rules:\n"
      "  - {name: a, hosts: [a.test], ask: true}\n"
      "  - {name: b, hosts: [b.test], ask: {timeout: 5s}}\n"
      "  - {name: c, hosts: [c.test], ask: false}\n");
  ASSERT_TRUE(p);
  const auto& a = p->model().approvals;
  EXPECT_TRUE(a.ask_unmatched);
  EXPECT_EQ(a.timeout, 30s);
  EXPECT_EQ(a.max_held_per_agent, 2u);
  EXPECT_EQ(a.max_held_total, 9u);
  const auto& rules = p->model().rules;
  EXPECT_TRUE(rules[0].ask.on);
  EXPECT_FALSE(rules[0].ask.timeout);
  EXPECT_TRUE(rules[1].ask.on);
  EXPECT_EQ(rules[1].ask.timeout, 5s);
  EXPECT_FALSE(rules[2].ask.on);
}

TEST(PolicyApprovals, BadValuesAreErrors) {
  for (const char* yaml : {
           "approvals: {ask_unmatched: yes}\n",
           "approvals: {timeout: 0s}\n",
           "approvals: {timeout: 25h}\n",
           "approvals: {max_held_per_agent: 0}\n",
           "approvals: {max_held: 3}\n",
           "rules: [{name: a, hosts: [a.test], ask: {timeout: 2d}}]\n",
           "rules: [{name: a, hosts: [a.test], ask: {after: 2s}}]\n",
           "include: overlay.yaml\n",
       }) {
    auto r = load_string(yaml, "p.yaml");
    EXPECT_FALSE(r.ok()) << yaml;
  }
}

TEST(PolicyApprovals, IncludedRulesJoinTheAgents) {
  temp_dir d;
  d.write("extra.yaml",
          "rules:\n  - {name: approved-1, hosts: [x.test], ports: [443]}\n"
          "agents:\n  bot: {rules: [approved-1]}\n");
  const auto main = d.write("policy.yaml",
                            "include: [extra.yaml]\n"
                            "agents: {bot: {rules: [own]}}\n"
                            "rules: [{name: own, hosts: [own.test]}]\n");
  auto r = load_file(main);
  ASSERT_TRUE(r.ok()) << all_errors(r);
  const auto* bot = r.policy->find_agent("bot");
  ASSERT_NE(bot, nullptr);
  ASSERT_EQ(bot->rules.size(), 2u);
  EXPECT_EQ(bot->rules[0]->name, "own");  // the operator's rules first
  EXPECT_EQ(bot->rules[1]->name, "approved-1");
  // The version covers the included file: an approval written there is a new policy.
  d.write("extra.yaml",
          "rules:\n  - {name: approved-1, hosts: [x.test], ports: [8443]}\n"
          "agents:\n  bot: {rules: [approved-1]}\n");
  auto again = load_file(main);
  ASSERT_TRUE(again.ok()) << all_errors(again);
  EXPECT_NE(again.policy->version(), r.policy->version());
}

TEST(PolicyApprovals, MissingOverlayIsEmptyOtherIncludesAreNot) {
  temp_dir d;
  const auto main = d.write("policy.yaml",
                            "approvals: {overlay: approved.yaml}\n"
                            "include: [approved.yaml]\n");
  auto r = load_file(main);
  EXPECT_TRUE(r.ok()) << all_errors(r);
  const auto other = d.write("other.yaml", "include: [missing.yaml]\n");
  auto bad = load_file(other);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors[0].key, "include[0]");
  EXPECT_NE(bad.errors[0].file.find("missing.yaml"), std::string::npos);
}

// An error the compiler finds in an included rule names the included file and its line, not
// the file that included it.
TEST(PolicyApprovals, ErrorsInIncludedRulesNameTheirFile) {
  temp_dir d;
  d.write("extra.yaml",
          "# approved\n"
          "rules:\n"
          "  - name: bad-port\n"
          "    hosts: [x.test]\n"
          "    ports: [70000]\n"
          "  - {name: own, hosts: [y.test]}\n");
  const auto main = d.write("policy.yaml",
                            "include: [extra.yaml]\n"
                            "agents: {bot: {rules: [own]}}\n"
                            "rules: [{name: own, hosts: [own.test]}]\n");
  auto r = load_file(main);
  ASSERT_FALSE(r.ok());
  bool port = false, duplicate = false;
  for (const auto& e : r.errors) {
    SCOPED_TRACE(e.to_string());
    if (e.key.ends_with(".ports[0]")) {
      port = true;
      EXPECT_NE(e.file.find("extra.yaml"), std::string::npos);
      EXPECT_EQ(e.line, 5);
    }
    if (e.key.ends_with(".name") && e.message.find("duplicate") != std::string::npos) {
      duplicate = true;
      EXPECT_NE(e.file.find("extra.yaml"), std::string::npos);
      EXPECT_EQ(e.line, 6);
      // The first one stands in the including file.
      EXPECT_NE(e.message.find("policy.yaml line 3"), std::string::npos) << e.message;
    }
  }
  EXPECT_TRUE(port) << all_errors(r);
  EXPECT_TRUE(duplicate) << all_errors(r);
}

TEST(PolicyApprovals, IncludedFileMayNotMakeAgentsOrSetOtherKeys) {
  temp_dir d;
  d.write("a.yaml", "agents:\n  stranger: {rules: []}\n");
  d.write("b.yaml", "listen: {proxy: '0.0.0.0:80'}\n");
  d.write("c.yaml", "agents:\n  bot: {token_sha256: abc}\n");
  for (const char* name : {"a.yaml", "b.yaml", "c.yaml"}) {
    const auto main = d.write("policy.yaml",
                              std::string("include: [") + name + "]\nagents: {bot: {rules: []}}\n");
    auto r = load_file(main);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.errors[0].file.find(name), std::string::npos) << all_errors(r);
  }
}

}  // namespace
}  // namespace airlock::policy
