#include "filters/redaction/field_escapes.hpp"
#include "filters/redaction/json_relax.hpp"

#include <gtest/gtest.h>

#include <string>

// A field's text decoded once more as a client may (field_escapes.hpp), and JSON that clients
// read but Boost.JSON does not, relaxed before the guards parse it (json_relax.hpp).
namespace airlock::filters::redaction {
namespace {

std::pair<std::string, std::string> decode(std::string_view tail, std::string_view text) {
  std::string decoded, next;
  decode_field_escapes(tail, text, decoded, next);
  return {decoded, next};
}

TEST(redaction_field_escapes, PercentAndHtmlReferencesAreDecoded) {
  EXPECT_EQ(decode("", "%73%6B-live"), std::make_pair(std::string("sk-live"), std::string()));
  EXPECT_EQ(decode("", "&#115;&#x6b;&#45x"), std::make_pair(std::string("sk-x"), std::string()));
  EXPECT_EQ(decode("", "&#X4B;"), std::make_pair(std::string("K"), std::string()));
  EXPECT_EQ(decode("", "caf&#xe9;"), std::make_pair(std::string("caf\xC3\xA9"), std::string()));
  // Leading zeros, any number of them, as a browser reads them.
  EXPECT_EQ(decode("", "&#00000000000115;&#x000000006b.").first, "sk.");
  // Named references to ASCII characters; the legacy four without ';' too.
  EXPECT_EQ(decode("", "a&sol;b&plus;c&equals;d&lowbar;e&period;f&amp;g&ampx&lt;&lt3.").first,
            "a/b+c=d_e.f&g&x<<3.");
  // What starts no escape stays as written.
  EXPECT_EQ(
      decode("", "100% & 50%zz &#; &sol &copy; &nosuch; &#xg"),
      std::make_pair(std::string("100% & 50%zz &#; &sol &copy; &nosuch; &#xg"), std::string()));
  // A reference past U+10FFFF, to a surrogate or to zero reads as U+FFFD (WHATWG).
  EXPECT_EQ(decode("", "&#0;&#xD800;&#x110000;&#99999999999999;").first,
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // JSON's escapes (a string that holds JSON) and JavaScript's \x.
  EXPECT_EQ(decode("", R"(\u0073\x6b-\"\\\/\n\q\u00zz)").first, "sk-\"\\/\n\\q\\u00zz");
  EXPECT_EQ(decode("", R"(a\u007)").second, R"(\u007)");
  EXPECT_EQ(decode(R"(\u007)", "3").first, "s");
  EXPECT_TRUE(has_field_escapes("a\\b"));
  EXPECT_FALSE(has_field_escapes("plain text"));
  EXPECT_TRUE(has_field_escapes("a%"));
  EXPECT_TRUE(has_field_escapes("a&"));
}

TEST(redaction_field_escapes, AnEscapeSplitBetweenStringsIsCarried) {
  for (const std::string_view cut :
       {"%", "%7", "&", "&#", "&#x", "&#x7", "&#11", "&#115", "&so", "&sol", "&DiacriticalGrav"}) {
    const auto [first, tail] = decode("", std::string("sk") + std::string(cut));
    EXPECT_EQ(first, "sk") << cut;
    EXPECT_EQ(tail, cut);
    EXPECT_LE(tail.size(), kMaxEscapeTail);
  }
  EXPECT_EQ(decode("%7", "3k").first, "sk");
  EXPECT_EQ(decode("&#11", "5;k").first, "sk");
  EXPECT_EQ(decode("&#115", "k").first, "sk");  // (';' optional: the next character ends it)
  EXPECT_EQ(decode("&#x7", "3k").first, "sk");
  EXPECT_EQ(decode("&so", "l;x").first, "/x");
  EXPECT_EQ(decode("%", "zz").first, "%zz");
  // Leading zeros and digits past the eighth are not kept: the tail stays short.
  const auto [zeros, kept] = decode("", "&#" + std::string(10000, '0') + "11");
  EXPECT_EQ(zeros, "");
  EXPECT_EQ(kept, "&#011");
  EXPECT_EQ(decode(kept, "5;").first, "s");
  EXPECT_EQ(decode("", "&#x" + std::string(50, '0')).second, "&#x0");
  EXPECT_EQ(decode("", "&#123456789012").second, "&#12345678");
  EXPECT_EQ(decode("&#12345678", ";").first, "\xEF\xBF\xBD");
}

TEST(redaction_field_escapes, AReferenceAtTheEndOfAStringIsComplete) {
  std::string out;
  ASSERT_TRUE(decode_tail_as_ended("&#115", out));
  EXPECT_EQ(out, "s");
  ASSERT_TRUE(decode_tail_as_ended("&#x6B", out));
  EXPECT_EQ(out, "k");
  ASSERT_TRUE(decode_tail_as_ended("&amp", out));
  EXPECT_EQ(out, "&");
  for (const std::string_view not_one : {"%", "%7", "&", "&#", "&#x", "&sol", "&so"})
    EXPECT_FALSE(decode_tail_as_ended(not_one, out)) << not_one;
}

TEST(redaction_json_relax, NotFiniteNumbersAndLoneSurrogatesAreRelaxed) {
  std::string out;
  ASSERT_TRUE(relax_json(R"({"x":NaN,"y":[Infinity,-Infinity],"z":1})", out));
  EXPECT_EQ(out, R"({"x":null,"y":[null,null],"z":1})");
  ASSERT_TRUE(
      relax_json(R"({"a":"\ud800","b":"x\udc00y","c":"\ud83d\ude00","d":"\ud800\u0041"})", out));
  EXPECT_EQ(out, R"({"a":"\ufffd","b":"x\ufffdy","c":"\ud83d\ude00","d":"\ufffd\u0041"})");
}

TEST(redaction_json_relax, StringsAndOtherTokensAreKept) {
  std::string out;
  // The words inside strings, as parts of other tokens, and escaped quotes are not touched.
  EXPECT_FALSE(relax_json(R"({"NaN":"Infinity \" NaN","k":"\\ud800","n":nullNaN})", out));
  EXPECT_FALSE(relax_json(R"(["\ud83d\ude00", 1e5, true])", out));
  // A string cut short (an event's data is what came) does not read past its end.
  EXPECT_TRUE(relax_json(R"({"a":NaN,"b":"\ud800)", out));
  EXPECT_EQ(out, R"({"a":null,"b":"\ufffd)");
  EXPECT_FALSE(relax_json(R"({"a":"\)", out));
  EXPECT_FALSE(relax_json(R"({"a":"\u12)", out));
}

}  // namespace
}  // namespace airlock::filters::redaction
