#include "filters/validation/query.hpp"

#include "policy/checks_compiler.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace airlock::filters::validation {
namespace {

using policy::model::unknown_params;

policy::compiled_query compile(std::vector<std::pair<std::string, std::string>> params,
                               std::vector<std::string> required = {},
                               unknown_params unknown = unknown_params::refuse) {
  policy::model::rule r;
  r.query.present = true;
  r.query.params = std::move(params);
  r.query.required = std::move(required);
  r.query.unknown = unknown;
  std::string errors;
  auto c = policy::compile_checks(
      r, [&](const std::string& key, std::string message) { errors += key + ": " + message; });
  EXPECT_EQ(errors, "");
  return c.query;
}

// The schema's example: per_page digits (required), page any value.
policy::compiled_query example(unknown_params unknown = unknown_params::refuse) {
  return compile({{"per_page", "^[0-9]{1,3}$"}, {"page", ""}}, {"per_page"}, unknown);
}

std::optional<violation> check(const policy::compiled_query& q, std::string_view raw) {
  std::optional<std::string> rewritten;
  auto v = check_query(q, raw, rewritten);
  EXPECT_FALSE(rewritten) << "rewritten to '" << *rewritten << "' for " << raw;
  return v;
}

void expect_pass(const policy::compiled_query& q, std::string_view raw) {
  auto v = check(q, raw);
  EXPECT_FALSE(v) << raw << ": " << v->detail();
}

void expect_refused(const policy::compiled_query& q, std::string_view raw,
                    const std::string& parameter, const std::string& constraint) {
  auto v = check(q, raw);
  ASSERT_TRUE(v) << raw;
  EXPECT_EQ(v->reason, core::errc::query_denied);
  EXPECT_EQ(v->parameter, parameter) << raw;
  EXPECT_EQ(v->constraint, constraint) << raw;
}

TEST(ValidationQuery, NoChecksPassesAnything) {
  policy::compiled_query none;
  std::optional<std::string> rewritten = "stale";
  EXPECT_FALSE(check_query(none, "a=%zz;b&&\x01", rewritten));
  EXPECT_FALSE(rewritten);  // reset on every call
}

TEST(ValidationQuery, ValidRequestPassesUnchanged) {
  const auto q = example();
  expect_pass(q, "per_page=100");
  expect_pass(q, "per_page=1&page=anything%20at%20all");
  expect_pass(q, "page=&per_page=999");
  expect_pass(q, "per_page=5&&page=2&");  // empty pieces are no parameters
}

TEST(ValidationQuery, PatternMustMatchInFull) {
  const auto q = example();
  expect_refused(q, "per_page=1000", "query per_page", "pattern ^[0-9]{1,3}$");
  expect_refused(q, "per_page=12a", "query per_page", "pattern ^[0-9]{1,3}$");
  // No anchors in the pattern: still a full match.
  const auto loose = compile({{"id", "[0-9]+"}});
  expect_pass(loose, "id=42");
  expect_refused(loose, "id=42x", "query id", "pattern [0-9]+");
  expect_refused(loose, "id=x42", "query id", "pattern [0-9]+");
  const auto alternation = compile({{"sort", "asc|desc"}});
  expect_pass(alternation, "sort=desc");
  expect_refused(alternation, "sort=ascending", "query sort", "pattern asc|desc");
}

TEST(ValidationQuery, DetailNamesParameterAndPatternButNotTheValue) {
  const auto q = example();
  auto v = check(q, "per_page=AKIAIOSFODNN7EXAMPLE");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail(), "query parameter 'per_page' breaks pattern '^[0-9]{1,3}$'");
  EXPECT_EQ(v->detail().find("AKIA"), std::string::npos);
  EXPECT_EQ(v->parameter.find("AKIA"), std::string::npos);
  EXPECT_EQ(v->constraint.find("AKIA"), std::string::npos);
}

TEST(ValidationQuery, EveryValueOfARepeatedParameterMustMatch) {
  const auto q = example();
  expect_pass(q, "per_page=1&per_page=2");
  expect_refused(q, "per_page=1&per_page=9999", "query per_page", "pattern ^[0-9]{1,3}$");
  expect_refused(q, "per_page=9999&per_page=1", "query per_page", "pattern ^[0-9]{1,3}$");
}

TEST(ValidationQuery, RequiredParameter) {
  const auto q = example();
  expect_refused(q, "", "query per_page", "required");
  expect_refused(q, "page=2", "query per_page", "required");
  expect_refused(q, "per_pag=1", "query per_pag", "unknown parameter");
  auto v = check(q, "page=2");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail(), "query parameter 'per_page' is missing");
}

TEST(ValidationQuery, NameWithoutValueIsAnEmptyValue) {
  const auto q = compile({{"flag", "x?"}, {"strict", "x"}});
  expect_pass(q, "flag");
  expect_pass(q, "flag=");
  expect_pass(q, "flag=x");
  expect_refused(q, "strict", "query strict", "pattern x");
  expect_refused(q, "strict=", "query strict", "pattern x");
  const auto req = compile({{"flag", ""}}, {"flag"});
  expect_pass(req, "flag");  // present, even without '='
}

TEST(ValidationQuery, UnknownRefused) {
  const auto q = example();
  expect_refused(q, "per_page=1&admin=true", "query admin", "unknown parameter");
  auto v = check(q, "per_page=1&admin=true");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail(), "query parameter 'admin' is not allowed");
  const auto nothing = compile({});  // `query: {}`: no parameter at all
  expect_pass(nothing, "");
  expect_refused(nothing, "a", "query a", "unknown parameter");
}

TEST(ValidationQuery, UnknownAllowed) {
  const auto q = example(unknown_params::allow);
  expect_pass(q, "per_page=1&admin=true&x");
  // Listed parameters are still checked.
  expect_refused(q, "admin=1&per_page=1000", "query per_page", "pattern ^[0-9]{1,3}$");
}

TEST(ValidationQuery, UnknownAllowedButNotAVariantOfAListedName) {
  // An origin that ignores case in names (ASP.NET) would read these as per_page/size.
  const auto q =
      compile({{"per_page", "^[0-9]{1,3}$"}, {"size", "[0-9]"}}, {}, unknown_params::allow);
  expect_refused(q, "PER_PAGE=99999", "query PER_PAGE", "unknown parameter");
  expect_refused(q, "Per_Page=99999", "query Per_Page", "unknown parameter");
  expect_refused(q, "%C5%BFize=99", "query \\xC5\\xBFize", "unknown parameter");  // U+017F
  // PHP reads these as per_page too.
  expect_refused(q, "per.page=99999", "query per.page", "unknown parameter");
  expect_refused(q, "per+page=99999", "query per page", "unknown parameter");
  expect_refused(q, "+per_page=99999", "query  per_page", "unknown parameter");
  expect_refused(q, "per[page=99999", "query per[page", "unknown parameter");
  expect_refused(q, "per_page%5B%5D=99999", "query per_page[]", "unknown parameter");
  expect_refused(q, "per_page[0]=99999", "query per_page[0]", "unknown parameter");
  expect_refused(q, "Per.Page[]=99999", "query Per.Page[]", "unknown parameter");
  expect_pass(q, "per_pages=1&xper_page=1&per-page=1&[per_page]=1&per_page2[]=1");
}

TEST(ValidationQuery, UnknownStripped) {
  const auto q = example(unknown_params::strip);
  std::optional<std::string> rewritten;
  EXPECT_FALSE(check_query(q, "per_page=%31&admin=true&page=a+b&x&&debug=%zz%00", rewritten));
  ASSERT_TRUE(rewritten);
  // The kept parameters byte for byte and in order; the stripped values are never read.
  EXPECT_EQ(*rewritten, "per_page=%31&page=a+b");

  EXPECT_FALSE(check_query(q, "per_page=1", rewritten));
  EXPECT_FALSE(rewritten);  // nothing removed: the target stays as it is
  EXPECT_FALSE(check_query(q, "per_page=1&per_page=2&&page", rewritten));
  EXPECT_FALSE(rewritten);

  const auto optional_only = compile({{"page", ""}}, {}, unknown_params::strip);
  EXPECT_FALSE(check_query(optional_only, "a=1&b=2", rewritten));
  ASSERT_TRUE(rewritten);
  EXPECT_EQ(*rewritten, "");  // everything removed: drop the '?'
}

TEST(ValidationQuery, StripStillChecksListedParameters) {
  const auto q = example(unknown_params::strip);
  std::optional<std::string> rewritten;
  auto v = check_query(q, "x=1&per_page=1000", rewritten);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "pattern ^[0-9]{1,3}$");
  v = check_query(q, "x=1", rewritten);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "required");
}

TEST(ValidationQuery, EncodedNamesAreDecoded) {
  const auto q = example();
  expect_refused(q, "per%5Fpage=5000", "query per_page", "pattern ^[0-9]{1,3}$");
  expect_refused(q, "per%5fpage=5000", "query per_page", "pattern ^[0-9]{1,3}$");
  expect_refused(q, "%70%65%72%5f%70%61%67%65=5000", "query per_page", "pattern ^[0-9]{1,3}$");
  expect_pass(q, "per%5Fpage=5");  // and it satisfies `required`
  expect_pass(q, "per_page=%35%30");
  expect_refused(q, "per_page=%35%30%30%30", "query per_page", "pattern ^[0-9]{1,3}$");
}

TEST(ValidationQuery, PlusIsASpaceAndEncodedPlusIsAPlus) {
  const auto q = compile({{"q", "a b"}, {"p", "a\\+b"}});
  expect_pass(q, "q=a+b");
  expect_pass(q, "q=a%20b");
  expect_refused(q, "q=a%2Bb", "query q", "pattern a b");
  expect_pass(q, "p=a%2Bb");
  expect_pass(q, "p=a%2bb");
  expect_refused(q, "p=a+b", "query p", "pattern a\\+b");
  const auto names = compile({{"a b", ""}});
  expect_pass(names, "a+b=1");
  expect_refused(names, "a%2Bb=1", "query a+b", "unknown parameter");
}

TEST(ValidationQuery, DoubleEncodingIsDecodedOnce) {
  const auto q = example();
  expect_refused(q, "per_page=%2531", "query per_page", "pattern ^[0-9]{1,3}$");  // "%31"
  expect_refused(q, "per%255Fpage=1", "query per%5Fpage", "unknown parameter");
}

TEST(ValidationQuery, MalformedEscapes) {
  const auto q = example();
  for (const char* raw : {"per_page=%", "per_page=%4", "per_page=1%G1", "per_page=%%31",
                          "per_page=1%", "per_page=%-1"}) {
    expect_refused(q, raw, "query per_page", "encoding");
  }
  expect_refused(q, "per%_page=1", "query per%_page", "encoding");
  expect_refused(q, "%zz=1", "query %zz", "encoding");
  auto v = check(q, "per_page=%4");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail(), "query parameter 'per_page' is not validly encoded");
}

TEST(ValidationQuery, DecodedNulIsRefused) {
  const auto q = compile({{"a", ".*"}}, {}, unknown_params::allow);
  expect_refused(q, "a=1%00", "query a", "encoding");
  expect_refused(q, "a%00b=1", "query a%00b", "encoding");
  expect_refused(q, "x=%00", "query x", "encoding");  // even an allowed unknown parameter
}

TEST(ValidationQuery, InvalidUtf8IsRefused) {
  const auto q = compile({{"a", ".*"}, {"b", "."}});
  expect_pass(q, "a=%C3%A9");
  expect_pass(q, "b=%C3%A9");  // one character
  expect_pass(q, "b=%F0%9F%98%80");
  for (const char* raw : {"a=%C0%AF",        // overlong '/'
                          "a=%E0%80%AF",     // overlong '/', three bytes
                          "a=%F0%80%80%AF",  // overlong '/', four bytes
                          "a=%C1%81",        // overlong 'A'
                          "a=%ED%A0%80",     // UTF-16 surrogate
                          "a=%F4%90%80%80",  // above U+10FFFF
                          "a=%FF", "a=%80",  // not a lead byte
                          "a=%C3",           // truncated
                          "a=%E2%82"}) {     // truncated
    expect_refused(q, raw, "query a", "encoding");
  }
  expect_refused(q, "a=\xC0\xAF", "query a", "encoding");     // raw bytes too
  expect_refused(q, "%C0%AF=1", "query %C0%AF", "encoding");  // as sent: it cannot be decoded
}

TEST(ValidationQuery, RawSemicolonIsRefusedInKeptParameters) {
  const auto q = example(unknown_params::allow);
  // "page" takes any value, but an origin that also splits on ';' would see admin=1.
  expect_refused(q, "per_page=1&page=1;admin=1", "query page", "encoding");
  expect_refused(q, "per_page=1&x;y=1", "query x;y", "encoding");
  expect_pass(q, "per_page=1&page=1%3Badmin=1");
  const auto strip = example(unknown_params::strip);
  std::optional<std::string> rewritten;
  EXPECT_FALSE(check_query(strip, "per_page=1&x=1;page=2", rewritten));
  ASSERT_TRUE(rewritten);
  EXPECT_EQ(*rewritten, "per_page=1");
}

TEST(ValidationQuery, AgentChosenNamesAreMadePrintableAndBounded) {
  const auto q = example();
  const std::string long_name(500, 'n');
  auto v = check(q, "per_page=1&" + long_name + "=1");
  ASSERT_TRUE(v);
  EXPECT_LE(v->parameter.size(), 6u + 64u + 3u);
  EXPECT_EQ(v->parameter.substr(v->parameter.size() - 3), "...");
  v = check(q, "per_page=1&%0D%0ASet-Cookie:%20x%22=1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->parameter, "query \\x0D\\x0ASet-Cookie: x\"");
  for (char c : v->detail())
    EXPECT_TRUE(c >= 0x20 && c < 0x7F) << int(c);
}

TEST(ValidationQuery, ManyParametersStayFast) {
  // Bounded work: 20 000 parameters, each looked up once, plus one rescan per required name.
  const auto q = compile({{"a", "[0-9]+"}}, {"a"});
  std::string raw;
  for (int i = 0; i < 20000; ++i)
    raw += "a=1&";
  raw += "a=x";
  expect_refused(q, raw, "query a", "pattern [0-9]+");
  raw.resize(raw.size() - 4);
  expect_pass(q, raw);
}

}  // namespace
}  // namespace airlock::filters::validation
