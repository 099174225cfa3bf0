#include "policy/redactor_names.hpp"

#include "core/str_cat.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "secret_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace airlock::policy {
namespace {

using test::dump;

load_result load(std::string_view yaml) {
  return load_string(yaml, "p.yaml");
}

void expect_one(std::string_view yaml, int line, int column, std::string_view key,
                std::string_view message) {
  const auto r = load(yaml);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].line, line) << dump(r.errors);
  EXPECT_EQ(r.errors[0].column, column) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, key) << dump(r.errors);
  EXPECT_NE(r.errors[0].message.find(message), std::string::npos) << dump(r.errors);
}

TEST(Redactors, CompiledInFileOrder) {
  auto r = load(R"(redactors:
  - {name: aws-key, pattern: 'AKIA[0-9A-Z]{16}', replace: '[REDACTED:aws-key]'}
  - name: internal-id
    pattern: 'INT-[0-9]{6}'
  - {name: session, pattern: 'session=(?P<redact>[A-Za-z0-9]{16,64})', replace: '***'}
)");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  const auto list = r.policy->redactors();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].name, "aws-key");
  EXPECT_EQ(list[0].pattern, "AKIA[0-9A-Z]{16}");
  EXPECT_EQ(list[0].replacement, "[REDACTED:aws-key]");
  EXPECT_FALSE(list[0].partial);
  EXPECT_EQ(list[1].replacement, "[REDACTED:internal-id]");  // the default
  EXPECT_EQ(list[2].replacement, "***");
  EXPECT_TRUE(list[2].partial);
  EXPECT_EQ(r.policy->find_redactor("session"), &list[2]);
  EXPECT_EQ(r.policy->find_redactor("email"), nullptr);  // built-ins are not listed
  EXPECT_EQ(r.policy->model().redactors[1].at.line, 3);
}

TEST(Redactors, EmptyListIsFine) {
  auto r = load("redactors: []\n");
  ASSERT_TRUE(r.ok()) << dump(r.errors);
  EXPECT_TRUE(r.policy->redactors().empty());
}

TEST(RedactorErrors, Shape) {
  expect_one("redactors: {name: x}\n", 1, 12, "redactors", "expected a list of redactors");
  expect_one("redactors:\n  - just-a-name\n", 2, 5, "redactors[0]", "expected a mapping");
  expect_one("redactors:\n  - {name: x, pattern: y, replacement: z}\n", 2, 27,
             "redactors[0].replacement", "unknown key 'replacement'");
  expect_one("redactors:\n  - {pattern: 'abc'}\n", 2, 5, "redactors[0]",
             "missing required key 'name'");
  expect_one("redactors:\n  - {name: x}\n", 2, 5, "redactors[0]", "missing required key 'pattern'");
  expect_one("redactors:\n  - {name: x, pattern: ''}\n", 2, 24, "redactors[0].pattern",
             "must not be empty");
  // A misspelt key makes "missing" errors noise: only the misspelling is reported.
  expect_one("redactors:\n  - {nmae: x, pattern: abc}\n", 2, 6, "redactors[0].nmae",
             "unknown key 'nmae'; did you mean 'name'?");
}

TEST(RedactorErrors, Names) {
  expect_one("redactors:\n  - {name: 'a b', pattern: abc}\n", 2, 12, "redactors[0].name",
             "invalid redactor name 'a b'");
  expect_one("redactors:\n  - {name: 'a:b', pattern: abc}\n", 2, 12, "redactors[0].name",
             "invalid redactor name");
  expect_one("redactors:\n  - {name: " + std::string(129, 'a') + ", pattern: abc}\n", 2, 12,
             "redactors[0].name", "at most 128");
  expect_one("redactors:\n  - {name: email, pattern: 'x@y'}\n", 2, 12, "redactors[0].name",
             "'email' is a built-in redactor: give yours another name");
  expect_one("redactors:\n  - {name: a, pattern: abc}\n  - {name: a, pattern: def}\n", 3, 12,
             "redactors[1].name", "duplicate redactor name 'a' (first at line 2)");
}

TEST(RedactorErrors, EveryBuiltinNameIsReserved) {
  for (std::string_view name : builtin_redactor_names()) {
    EXPECT_TRUE(is_builtin_redactor(name));
    const auto r = load(core::str_cat("redactors:\n  - {name: ", name, ", pattern: abc}\n"));
    ASSERT_EQ(r.errors.size(), 1u) << name;
    EXPECT_EQ(r.errors[0].key, "redactors[0].name");
  }
  EXPECT_FALSE(is_builtin_redactor("aws-key"));
  EXPECT_FALSE(is_builtin_redactor("EMAIL"));
}

TEST(RedactorErrors, Patterns) {
  expect_one("redactors:\n  - {name: x, pattern: 'a(b'}\n", 2, 24, "redactors[0].pattern",
             "invalid regular expression: missing ): a(b");
  expect_one("redactors:\n  - {name: x, pattern: '(?<=a)b'}\n", 2, 24, "redactors[0].pattern",
             "invalid regular expression");
  expect_one("redactors:\n  - {name: x, pattern: 'a{2000}{2000}'}\n", 2, 24, "redactors[0].pattern",
             "invalid regular expression");
  // Groups: the engine replaces group 1 only, so a plain group would leave the rest in place.
  for (const char* p : {"(AKIA|ASIA)[0-9A-Z]{16}", "(?P<key>AKIA)[0-9A-Z]{16}",
                        "(?P<redact>a)(?P<b>b)", "(?P<redact>a)(b)"}) {
    const auto r = load(core::str_cat("redactors:\n  - {name: x, pattern: '", p, "'}\n"));
    ASSERT_EQ(r.errors.size(), 1u) << p << dump(r.errors);
    EXPECT_NE(r.errors[0].message.find("capturing groups are not allowed"), std::string::npos);
  }
  for (const char* p : {"(?:AKIA|ASIA)[0-9A-Z]{16}", "key=(?P<redact>[a-z]+)", "(?i)secret"})
    EXPECT_TRUE(load(core::str_cat("redactors:\n  - {name: x, pattern: '", p, "'}\n")).ok()) << p;
}

TEST(RedactorErrors, PatternsThatMatchNothing) {
  for (const char* p : {"a*", "", "x|", "(?:)", "\\b", "\\B", "^", "$", "(?m)^", "(?m)$", "a?b?",
                        "\\A", "\\z", "[a-z]{0,5}", "(?P<redact>a*)b?", "a|\\b", "(?s).*"}) {
    const auto r = load(core::str_cat("redactors:\n  - {name: x, pattern: '", p, "'}\n"));
    ASSERT_EQ(r.errors.size(), 1u) << p << dump(r.errors);
    EXPECT_EQ(r.errors[0].key, "redactors[0].pattern");
    const bool empty_key = std::string_view(p).empty();
    EXPECT_NE(r.errors[0].message.find(empty_key ? "must not be empty" : "matches an empty string"),
              std::string::npos)
        << p;
  }
  for (const char* p : {"a", "a+", "\\ba\\b", "^a", "(?m)^#.*", ".", "[^a]"})
    EXPECT_TRUE(load(core::str_cat("redactors:\n  - {name: x, pattern: '", p, "'}\n")).ok()) << p;
}

TEST(RedactorErrors, Replacement) {
  expect_one("redactors:\n  - {name: x, pattern: abc, replace: ''}\n", 2, 38,
             "redactors[0].replace", "must not be empty");
  expect_one("redactors:\n  - {name: x, pattern: abc, replace: \"a\\r\\nSet-Cookie: x\"}\n", 2, 38,
             "redactors[0].replace", "must be printable ASCII");
  expect_one("redactors:\n  - {name: x, pattern: abc, replace: " + std::string(257, 'r') + "}\n", 2,
             38, "redactors[0].replace", "longer than 256 bytes");
  EXPECT_TRUE(
      load("redactors:\n  - {name: x, pattern: abc, replace: " + std::string(256, 'r') + "}\n")
          .ok());
}

TEST(RedactorErrors, EveryErrorAtOnce) {
  const auto r = load(R"(redactors:
  - {name: email, pattern: 'a(b'}
  - {name: ok, pattern: 'x*', replace: ''}
  - {name: ok, pattern: abc}
)");
  ASSERT_EQ(r.errors.size(), 5u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "redactors[0].name");
  EXPECT_EQ(r.errors[1].key, "redactors[0].pattern");
  EXPECT_EQ(r.errors[2].key, "redactors[1].pattern");
  EXPECT_EQ(r.errors[3].key, "redactors[1].replace");
  EXPECT_EQ(r.errors[4].key, "redactors[2].name");
  EXPECT_EQ(r.errors[4].message, "duplicate redactor name 'ok' (first at line 3)");
}

TEST(RedactorErrors, RulesNameBuiltInAndCustomRedactors) {
  // A rule's redact list resolves against the built-ins and the custom redactors; a name that
  // is neither is an error listing both. (More in credentials_test.cpp.)
  const auto r = load(R"(redactors:
  - {name: aws-key, pattern: 'AKIA[0-9A-Z]{16}'}
rules:
  - name: r
    hosts: [a.example]
    ports: [80]
    redact: [aws-key, email, aws_key]
)");
  ASSERT_EQ(r.errors.size(), 1u) << dump(r.errors);
  EXPECT_EQ(r.errors[0].key, "rules[0].redact[2]");
  EXPECT_EQ(r.errors[0].line, 7);
  EXPECT_NE(r.errors[0].message.find("unknown redactor 'aws_key' (built-in: aws-access-key, "),
            std::string::npos)
      << dump(r.errors);
  EXPECT_NE(r.errors[0].message.find("; custom: aws-key)"), std::string::npos) << dump(r.errors);
  const auto ok = load(R"(redactors:
  - {name: aws-key, pattern: 'AKIA[0-9A-Z]{16}'}
rules:
  - {name: r, hosts: [a.example], ports: [80], redact: [aws-key, email]}
)");
  ASSERT_TRUE(ok.ok()) << dump(ok.errors);
  EXPECT_EQ(ok.policy->rules()[0].redact.redactors, (std::vector<std::string>{"aws-key", "email"}));
}

}  // namespace
}  // namespace airlock::policy
