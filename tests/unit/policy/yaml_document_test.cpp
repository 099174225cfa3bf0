// The policy file's one YAML document, and inputs that made yaml-cpp 0.7 loop forever (found by
// fuzz/policy_fuzz.cpp; kept in fuzz/corpus/policy/ as regression seeds).

#include "policy/yaml_document.hpp"
#include "policy/loader.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

TEST(YamlDocument, Counts) {
  EXPECT_EQ(read_yaml_document("").what, yaml_document::status::none);
  EXPECT_EQ(read_yaml_document("# only a comment\n").what, yaml_document::status::none);
  auto one = read_yaml_document("a: 1\n");
  ASSERT_EQ(one.what, yaml_document::status::one);
  EXPECT_EQ(one.root["a"].as<int>(), 1);
  auto two = read_yaml_document("a: 1\n---\nb: 2\n");
  EXPECT_EQ(two.what, yaml_document::status::several);
  EXPECT_EQ(two.second.line, 2);  // 0-based: the second document's root
}

TEST(YamlDocument, StrayFlowIndicatorsEndWithAnError) {
  for (std::string_view text : {",", "\n,\n", "]", "}", "a: 1\n---\n,"}) {
    const auto r = load_string(text, "p.yaml");
    ASSERT_FALSE(r.ok()) << text;
    ASSERT_FALSE(r.errors.empty()) << text;
    EXPECT_EQ(r.errors[0].file, "p.yaml");
    EXPECT_GE(r.errors[0].line, 1) << text;
  }
}

}  // namespace
}  // namespace airlock::policy
