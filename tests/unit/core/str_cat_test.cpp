#include "core/str_cat.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace airlock::core {
namespace {

TEST(StrCat, Empty) {
  EXPECT_EQ(str_cat(), "");
  EXPECT_EQ(str_cat(""), "");
  EXPECT_EQ(str_cat(std::string_view{}), "");
}

TEST(StrCat, StringKinds) {
  const std::string s = "str";
  const char* p = "ptr";
  std::string_view v = "view";
  EXPECT_EQ(str_cat(s, '|', p, '|', v, '|', "lit"), "str|ptr|view|lit");
}

TEST(StrCat, CharIsACharacterNotANumber) {
  EXPECT_EQ(str_cat('a', 'b'), "ab");
  EXPECT_EQ(str_cat('\0').size(), 1u);
}

TEST(StrCat, Integers) {
  EXPECT_EQ(str_cat(0), "0");
  EXPECT_EQ(str_cat(-42), "-42");
  EXPECT_EQ(str_cat(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(str_cat(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(str_cat(std::uint16_t{443}), "443");
  // signed/unsigned char are small numbers, not characters.
  EXPECT_EQ(str_cat(static_cast<unsigned char>(65)), "65");
  EXPECT_EQ(str_cat(static_cast<signed char>(-1)), "-1");
}

TEST(StrCat, FloatingPointAndBool) {
  EXPECT_EQ(str_cat(1.5), "1.5");
  EXPECT_EQ(str_cat(0.25f), "0.25");
  EXPECT_EQ(str_cat(true, ' ', false), "true false");
}

TEST(StrCat, KeepsEmbeddedNulFromViews) {
  std::string_view v("a\0b", 3);
  auto out = str_cat(v, 'c');
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(out, std::string("a\0bc", 4));
}

TEST(StrCat, LongInput) {
  std::string big(100'000, 'x');
  auto out = str_cat(big, 1, big);
  EXPECT_EQ(out.size(), 200'001u);
  EXPECT_EQ(out[100'000], '1');
}

}  // namespace
}  // namespace airlock::core
