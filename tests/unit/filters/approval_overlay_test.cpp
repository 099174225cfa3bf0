// A permanent approval adds its rule to the overlay file's text and keeps the rest byte for
// byte: an operator's edit (a rule narrowed to a path, an `ask` added, comments) survives every
// later approval; a file whose shape leaves no place for the rule is refused, never rewritten.
#include "filters/approval/overlay.hpp"
#include "filters/approval/overlay_text.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace airlock::filters::approval {
namespace {

overlay_addition approval(std::string name, std::string agent = "default") {
  overlay_addition a;
  a.rule_name = name;
  a.agent = std::move(agent);
  a.fields = {{"name", yaml_quoted(name)}, {"hosts", R"(["b.test"])"}, {"ports", "[443]"}};
  return a;
}

// The repro's overlay: approved-1 narrowed by the operator to ^/safe/ and held (`ask`).
constexpr const char* kNarrowed = R"(# Permanent approvals, written by airlock (approvals.overlay)
rules:
  - name: "approved-1"
    hosts: ["a.test"]
    ports: [443]
    paths: ['^/safe/']   # narrowed by hand
    ask: true
agents:
  "default":
    rules: ["approved-1"]
)";

TEST(approval_overlay, AnOperatorsNarrowedRuleIsKeptByteForByte) {
  std::string error;
  const auto text = append_to_overlay(kNarrowed, approval("approved-2"), error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(text, R"(# Permanent approvals, written by airlock (approvals.overlay)
rules:
  - name: "approved-1"
    hosts: ["a.test"]
    ports: [443]
    paths: ['^/safe/']   # narrowed by hand
    ask: true
  - name: "approved-2"
    hosts: ["b.test"]
    ports: [443]
agents:
  "default":
    rules: ["approved-1", "approved-2"]
)");
}

TEST(approval_overlay, AnEmptyFileGetsAHeaderAndTheTwoLists) {
  std::string error;
  const auto text = append_to_overlay("", approval("approved-1"), error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(text.substr(0, 2), "# ");
  EXPECT_NE(
      text.find("rules:\n  - name: \"approved-1\"\n    hosts: [\"b.test\"]\n    ports: [443]\n"
                "agents:\n  \"default\":\n    rules: [\"approved-1\"]\n"),
      std::string::npos)
      << text;
}

TEST(approval_overlay, FlowListsCompactItemsAndOtherAgentsAreKept) {
  std::string error;
  // Lists emptied by hand (flow style), a new agent, and an agent's block list.
  EXPECT_EQ(append_to_overlay("rules: []\nagents: {}\n", approval("approved-5"), error),
            "rules: [{name: \"approved-5\", hosts: [\"b.test\"], ports: [443]}]\n"
            "agents: {\"default\": {rules: [\"approved-5\"]}}\n");
  ASSERT_TRUE(error.empty()) << error;
  const std::string compact =
      "rules:\n- name: approved-1\n  hosts: [a.test]\n  ports: [80]\n\n# kept\nagents:\n"
      "  other:\n    rules: [approved-1]\n  default:\n    rules:\n      - approved-1\n"
      "  # the end";  // no newline at the end
  EXPECT_EQ(append_to_overlay(compact, approval("approved-2"), error),
            "rules:\n- name: approved-1\n  hosts: [a.test]\n  ports: [80]\n"
            "- name: \"approved-2\"\n  hosts: [\"b.test\"]\n  ports: [443]\n\n# kept\nagents:\n"
            "  other:\n    rules: [approved-1]\n  default:\n    rules:\n      - approved-1\n"
            "      - \"approved-2\"\n  # the end");
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(append_to_overlay(compact, approval("approved-2", "third"), error),
            "rules:\n- name: approved-1\n  hosts: [a.test]\n  ports: [80]\n"
            "- name: \"approved-2\"\n  hosts: [\"b.test\"]\n  ports: [443]\n\n# kept\nagents:\n"
            "  other:\n    rules: [approved-1]\n  default:\n    rules:\n      - approved-1\n"
            "  \"third\":\n    rules: [\"approved-2\"]\n  # the end");
  ASSERT_TRUE(error.empty()) << error;
}

TEST(approval_overlay, AShapeWithNoPlaceForTheRuleIsRefused) {
  for (const char* text : {
           "rules: [\n",                                     // does not parse
           "rules:\nagents: {}\n",                           // a null list
           "rules: []\nagents:\n  default: [approved-1]\n",  // the agent's entry is a list
           "rules: []\nagents: []\n",                        // agents is no mapping
           "rules: []\n---\nagents: {}\n",                   // two documents
       }) {
    std::string error;
    EXPECT_EQ(append_to_overlay(text, approval("approved-1"), error), "") << text;
    EXPECT_FALSE(error.empty()) << text;
  }
}

TEST(approval_overlay, TheNewNameIsNeitherTheFilesNorThePolicys) {
  auto loaded = policy::load_string(R"(
agents: {default: {rules: [approved-1]}}
rules: [{name: approved-1, hosts: [a.test], ports: [443]}]
)",
                                    "p.yaml");
  ASSERT_TRUE(loaded.policy);
  request_info r;
  r.agent = "default";
  r.host = "c.test";
  r.port = 8443;
  r.method = "GET";
  // The file was edited since the policy loaded: it names approved-3.
  const std::string file =
      "rules:\n  - {name: approved-3, hosts: [x.test], ports: [1]}\n"
      "agents:\n  default: {rules: [approved-3]}\n";
  auto change = add_to_overlay(*loaded.policy, r, true, file);
  ASSERT_TRUE(change.error.empty()) << change.error;
  EXPECT_EQ(change.rule_name, "approved-4");
  EXPECT_EQ(change.text.substr(0, change.text.find("agents:")),
            file.substr(0, file.find("agents:")) +
                "  - name: \"approved-4\"\n"
                "    hosts: [\"c.test\"]\n"
                "    ports: [8443]\n"
                "    methods: [\"GET\"]\n");
  // The diff (sorted lines): the rule's lines added, and the agent's one line changed.
  for (const char* line :
       {"-  default: {rules: [approved-3]}\n", "+  - name: \"approved-4\"\n",
        "+    methods: [\"GET\"]\n", "+  default: {rules: [approved-3, \"approved-4\"]}\n"})
    EXPECT_NE(change.diff.find(line), std::string::npos) << line << change.diff;
  EXPECT_EQ(std::count(change.diff.begin(), change.diff.end(), '\n'), 6);
  // A target DLP redacted is never written as a rule.
  r.redacted = true;
  change = add_to_overlay(*loaded.policy, r, false, file);
  EXPECT_FALSE(change.error.empty());
  EXPECT_TRUE(change.text.empty());
}

}  // namespace
}  // namespace airlock::filters::approval
