#include "policy/secret_value.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace airlock::policy {
namespace {

// Printing a secret by accident must not compile: no stream operator, no conversion to a
// string, no == (which would print both sides when an assertion fails).
template <typename T>
concept streamable = requires(std::ostream& os, const T& v) {
  os << v;
};
template <typename T>
concept equality_comparable = requires(const T& a, const T& b) {
  a == b;
};
static_assert(!streamable<secret_value>);
static_assert(!equality_comparable<secret_value>);
static_assert(!std::is_convertible_v<secret_value, std::string>);
static_assert(!std::is_convertible_v<secret_value, std::string_view>);
static_assert(!std::is_convertible_v<secret_value, const char*>);
static_assert(!std::is_constructible_v<std::string, secret_value>);
static_assert(!std::is_convertible_v<std::string, secret_value>);  // explicit only

constexpr std::string_view value = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

TEST(SecretValue, RevealsOnlyWhenAsked) {
  const secret_value v(value);
  EXPECT_EQ(v.reveal(), value);
  EXPECT_EQ(v.size(), value.size());
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(v.to_string(), "<secret: 40 bytes>");
}

TEST(SecretValue, GoogleTestPrintsTheRedactedForm) {
  // Short values live inside std::string objects (SSO): GoogleTest's fallback printer would
  // dump their bytes. PrintTo must win.
  const secret_value shorty("hunter22");
  const std::string printed = ::testing::PrintToString(shorty);
  EXPECT_EQ(printed, "<secret: 8 bytes>");
  EXPECT_EQ(printed.find("hunter"), std::string::npos);
  EXPECT_EQ(::testing::PrintToString(secret_value(value)).find("ghp_"), std::string::npos);
}

TEST(SecretValue, CopyMoveAndCompare) {
  secret_value a(value);
  secret_value b = a;
  EXPECT_EQ(b.reveal(), value);
  EXPECT_NE(a.reveal().data(), b.reveal().data());  // a copy, not a shared buffer
  EXPECT_TRUE(a.same_as(b));
  secret_value c = std::move(a);
  EXPECT_EQ(c.reveal(), value);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.reveal(), "");
  EXPECT_FALSE(a.same_as(c));
  EXPECT_TRUE(a.same_as(secret_value()));
  secret_value d("ghp_0123456789abcdefghijABCDEFGHIJ012346");
  EXPECT_FALSE(d.same_as(c));
  EXPECT_FALSE(secret_value("short-ab").same_as(c));
  d = c;
  EXPECT_TRUE(d.same_as(c));
  d = secret_value("another!");
  EXPECT_EQ(d.reveal(), "another!");
  secret_value& alias = d;
  d = std::move(alias);  // self-move leaves it intact
  EXPECT_EQ(d.reveal(), "another!");
  const secret_value& self = d;
  d = self;  // self-copy too
  EXPECT_EQ(d.reveal(), "another!");
}

TEST(SecretValue, EmptyIsEmpty) {
  const secret_value e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.reveal(), "");
  EXPECT_EQ(e.to_string(), "<secret: 0 bytes>");
  EXPECT_TRUE(secret_value(std::string_view()).empty());
}

}  // namespace
}  // namespace airlock::policy
