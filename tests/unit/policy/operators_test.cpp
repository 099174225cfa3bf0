// The policy's `operators:` (the admin port's operator tokens): the load's checks and the
// lookup of a presented token.
#include "policy/operators.hpp"
#include "policy/token.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

std::string load_errors(std::string_view yaml) {
  auto r = load_string(yaml, "p.yaml");
  EXPECT_FALSE(r.ok());
  std::string out;
  for (const auto& e : r.errors)
    out += e.to_string() + "\n";
  return out;
}

TEST(PolicyOperators, NoneByDefault) {
  auto p = test::must_load("mode: enforce\n");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->model().operators.empty());
  EXPECT_EQ(find_operator(p->model(), "anything"), nullptr);
}

TEST(PolicyOperators, TokensNameTheirOperator) {
  // Upper-case hex is accepted and compared as lower case.
  std::string upper = sha256_hex("bob-token");
  for (char& c : upper)
    if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
  auto p = test::must_load("operators:\n  alice: {token_sha256: " + sha256_hex("alice-token") +
                           "}\n  bob: {token_sha256: " + upper + "}\n");
  ASSERT_TRUE(p);
  const auto& m = p->model();
  ASSERT_EQ(m.operators.size(), 2u);
  const auto* a = find_operator(m, "alice-token");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "alice");
  const auto* b = find_operator(m, "bob-token");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name, "bob");
  EXPECT_EQ(find_operator(m, "alice-token "), nullptr);
  EXPECT_EQ(find_operator(m, ""), nullptr);
  // The hash itself is not a token.
  EXPECT_EQ(find_operator(m, sha256_hex("alice-token")), nullptr);
}

TEST(PolicyOperators, RefusesBadHashesNamesAndDuplicates) {
  const std::string h = sha256_hex("t");
  auto e = load_errors("operators: {alice: {token_sha256: my-secret-token}}\n");
  EXPECT_NE(e.find("operators.alice.token_sha256: must be 64 hex digits"), std::string::npos) << e;
  // The value is not echoed (it may be the token itself).
  EXPECT_EQ(e.find("my-secret-token"), std::string::npos) << e;
  e = load_errors("operators: {alice: {}}\n");
  EXPECT_NE(e.find("must be 64 hex digits"), std::string::npos) << e;
  e = load_errors("operators: {alice: {token_sha256: " + h + "}, bob: {token_sha256: " + h +
                  "}}\n");
  EXPECT_NE(e.find("same token as operator 'alice'"), std::string::npos) << e;
  e = load_errors("operators: {\"a b\": {token_sha256: " + h + "}}\n");
  EXPECT_NE(e.find("invalid operator name"), std::string::npos) << e;
  e = load_errors("operators: {alice: {token: " + h + "}}\n");
  EXPECT_NE(e.find("unknown key 'token'"), std::string::npos) << e;
  e = load_errors("operators: [alice]\n");
  EXPECT_NE(e.find("a mapping of operator names"), std::string::npos) << e;
}

}  // namespace
}  // namespace airlock::policy
