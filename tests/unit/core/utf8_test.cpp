#include "core/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

// append_utf8 (RFC 3629 section 3): each length's bounds, and what has no UTF-8 form; what it
// writes is what valid_utf8 accepts.
namespace airlock::core {
namespace {

std::string encoded(char32_t cp) {
  std::string out;
  append_utf8(out, cp);
  return out;
}

TEST(Utf8, AppendsEachLength) {
  EXPECT_EQ(encoded(U'A'), "A");
  EXPECT_EQ(encoded(0x7F), "\x7F");
  EXPECT_EQ(encoded(0x80), "\xC2\x80");
  EXPECT_EQ(encoded(0x7FF), "\xDF\xBF");
  EXPECT_EQ(encoded(0x800), "\xE0\xA0\x80");
  EXPECT_EQ(encoded(0xFFFF), "\xEF\xBF\xBF");
  EXPECT_EQ(encoded(0x10000), "\xF0\x90\x80\x80");
  EXPECT_EQ(encoded(0x10FFFF), "\xF4\x8F\xBF\xBF");
}

TEST(Utf8, SurrogatesAndTooLargeBecomeReplacementCharacter) {
  EXPECT_EQ(encoded(0xD800), "\xEF\xBF\xBD");
  EXPECT_EQ(encoded(0xDFFF), "\xEF\xBF\xBD");
  EXPECT_EQ(encoded(0x110000), "\xEF\xBF\xBD");
}

TEST(Utf8, WhatItWritesIsValid) {
  std::string all;
  for (char32_t cp = 0; cp < 0x110000; cp += 97)
    append_utf8(all, cp);
  EXPECT_TRUE(valid_utf8(all));
  EXPECT_FALSE(valid_utf8("\xC0\x80"));  // overlong
}

}  // namespace
}  // namespace airlock::core
