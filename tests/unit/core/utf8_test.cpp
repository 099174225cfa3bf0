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

TEST(PrintableText, ControlsAndMalformedBytesAreEscapedTheRestKept) {
  EXPECT_EQ(printable_text("plain ascii / é ✓ 😀"), "plain ascii / é ✓ 😀");
  EXPECT_EQ(printable_text("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(printable_text(std::string_view("x\0y\x1b[31m\x7f", 9)), "x\\x00y\\x1b[31m\\x7f");
  EXPECT_EQ(printable_text("\xC2\x85next-line"), "\\xc2\\x85next-line");  // U+0085, a C1 control
  EXPECT_EQ(printable_text("bad \xFF\xC3( end"), "bad \\xff\\xc3( end");
  EXPECT_EQ(printable_text("cut \xE2\x9C"), "cut \\xe2\\x9c");
  const std::string forged = "k\n2030-01-01T00:00:00Z info policy: loaded";
  EXPECT_EQ(printable_text(forged).find('\n'), std::string::npos);
  EXPECT_TRUE(valid_utf8(printable_text("\xFF\xFE\xC0\x80")));
}

}  // namespace
}  // namespace airlock::core
