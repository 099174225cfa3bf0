#include "filters/validation/text.hpp"

#include "filters/validation/violation.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace airlock::filters::validation {
namespace {

TEST(ValidationText, Utf8) {
  for (const std::string& ok :
       std::vector<std::string>{"", "abc", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", std::string("a\0b", 3)})
    EXPECT_TRUE(valid_utf8(ok)) << ok;
  for (const std::string bad :
       {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xC2", "\xC2\x41", "\xE0\x80\x80", "\xE0\x9F\xBF",
        "\xED\xA0\x80", "\xED\xBF\xBF", "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80",
        "\xF5\x80\x80\x80", "\xFE", "\xFF", "\xE2\x82", "a\xF0\x9F\x98"})
    EXPECT_FALSE(valid_utf8(bad)) << bad;
}

TEST(ValidationText, CodePoints) {
  EXPECT_EQ(code_points(""), 0u);
  EXPECT_EQ(code_points("abc"), 3u);
  EXPECT_EQ(code_points("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), 3u);
}

TEST(ValidationText, FormDecode) {
  std::string buf;
  auto d = form_decode("plain", buf);
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, "plain");
  EXPECT_TRUE(buf.empty());  // nothing to decode: a view of the input
  EXPECT_EQ(*form_decode("a+b%20c%2B%2b%41", buf), "a b c++A");
  EXPECT_EQ(*form_decode("%25%32%35", buf), "%25");  // decoded once
  EXPECT_EQ(*form_decode("", buf), "");
  for (const std::string& bad :
       std::vector<std::string>{"%", "%4", "%G0", "%0G", "a%%", "%00", "%C0%AF", "%FF", "\xFF",
                                "+%E2%82", std::string("a\0", 2)})
    EXPECT_FALSE(form_decode(bad, buf)) << bad;
}

TEST(ValidationText, FoldEqual) {
  EXPECT_TRUE(fold_equal("Model", "mODEL"));
  EXPECT_TRUE(fold_equal("", ""));
  EXPECT_TRUE(fold_equal("\xE2\x84\xAAind", "kind"));  // KELVIN SIGN
  EXPECT_TRUE(fold_equal("\xC5\xBFtream", "STREAM"));  // LONG S
  EXPECT_FALSE(fold_equal("model", "models"));
  EXPECT_FALSE(fold_equal("model", "mode"));
  EXPECT_FALSE(fold_equal("\xC3\xA9", "\xC3\x89"));  // only ASCII targets fold
  EXPECT_FALSE(fold_equal("a_b", "a-b"));
  EXPECT_FALSE(fold_equal("[", "{"));  // '[' is not 'A' + 26
}

TEST(ValidationText, LenientNameEqual) {
  EXPECT_TRUE(lenient_name_equal("PER_PAGE", "per_page"));
  EXPECT_TRUE(lenient_name_equal("per.page", "per_page"));
  EXPECT_TRUE(lenient_name_equal("per page", "per_page"));
  EXPECT_TRUE(lenient_name_equal("per[page", "per_page"));
  EXPECT_TRUE(lenient_name_equal("  per_page", "per_page"));
  EXPECT_TRUE(lenient_name_equal("per_page[]", "per_page"));
  EXPECT_TRUE(lenient_name_equal("per_page[a][b]", "per_page"));
  EXPECT_TRUE(lenient_name_equal("\xC5\xBFize", "size"));
  EXPECT_FALSE(lenient_name_equal("per_pages", "per_page"));
  EXPECT_FALSE(lenient_name_equal("per-page", "per_page"));
  EXPECT_FALSE(lenient_name_equal("per_page ", "per_page"));  // PHP keeps trailing ones ('_')
  EXPECT_FALSE(lenient_name_equal("[]", ""));
  EXPECT_FALSE(lenient_name_equal("x[per_page]", "per_page"));
}

TEST(ValidationText, Printable) {
  EXPECT_EQ(printable("per_page"), "per_page");
  EXPECT_EQ(printable(std::string("a\0b\r\n\x7F\xC3\xA9", 8)), "a\\x00b\\x0D\\x0A\\x7F\\xC3\\xA9");
  EXPECT_EQ(printable("say \"hi\" \\ 'x'"), "say \"hi\" \\ 'x'");
  const std::string longer(100, 'x');
  EXPECT_EQ(printable(longer), std::string(64, 'x') + "...");
  EXPECT_EQ(printable(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(printable(std::string(70, '\x01'), 10), "\\x01\\x01...");  // never splits an escape
}

TEST(ValidationText, Details) {
  EXPECT_EQ(query_violation("per_page", pattern_constraint("^[0-9]{1,3}$")).detail(),
            "query parameter 'per_page' breaks pattern '^[0-9]{1,3}$'");
  EXPECT_EQ(query_violation("a", "required").detail(), "query parameter 'a' is missing");
  EXPECT_EQ(query_violation("a", "unknown parameter").detail(),
            "query parameter 'a' is not allowed");
  EXPECT_EQ(query_violation("a", "encoding").detail(),
            "query parameter 'a' is not validly encoded");
  EXPECT_EQ(header_violation("Cookie", "forbidden").detail(), "header 'Cookie' is forbidden");
  EXPECT_EQ(body_field_violation("max_tokens", "maximum 4096").detail(),
            "body field 'max_tokens' breaks maximum 4096");
  EXPECT_EQ(body_field_violation("n", "type integer").detail(),
            "body field 'n' is not of type integer");
  EXPECT_EQ(body_field_violation("n", "max_length 3").detail(),
            "body field 'n' breaks max_length 3");
  EXPECT_EQ(body_violation("valid JSON").detail(), "body is not valid JSON");
  EXPECT_EQ(body_violation("max depth 64").detail(), "body is nested deeper than 64 levels");
  EXPECT_EQ(query_violation("a", "x").reason, core::errc::query_denied);
  EXPECT_EQ(header_violation("a", "x").reason, core::errc::header_denied);
  EXPECT_EQ(body_violation("x").reason, core::errc::body_denied);
  EXPECT_EQ(body_field_violation("a", "x").reason, core::errc::body_denied);
  const std::string pattern(300, 'p');
  EXPECT_EQ(pattern_constraint(pattern), "pattern " + std::string(128, 'p') + "...");
}

}  // namespace
}  // namespace airlock::filters::validation
