#include "policy/checks_compiler.hpp"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {
namespace {

using model::json_type;
using model::unknown_params;

struct result {
  compiled_checks checks;
  std::vector<std::pair<std::string, std::string>> errors;  // key, message
};

result compile(const model::rule& r) {
  result out;
  out.checks = compile_checks(r, [&](const std::string& key, std::string message) {
    out.errors.emplace_back(key, message);
  });
  return out;
}

std::string dump(const result& r) {
  std::string s;
  for (const auto& [k, m] : r.errors)
    s += k + ": " + m + "\n";
  return s;
}

// Exactly one error, at `key`, whose message contains `words`.
void expect_error(const model::rule& r, const std::string& key, const std::string& words) {
  const result res = compile(r);
  ASSERT_EQ(res.errors.size(), 1u) << dump(res);
  EXPECT_EQ(res.errors[0].first, key) << dump(res);
  EXPECT_NE(res.errors[0].second.find(words), std::string::npos) << dump(res);
}

model::json_field field(std::string path, json_type type = json_type::any) {
  model::json_field f;
  f.path = std::move(path);
  f.type = type;
  return f;
}

model::rule with_field(model::json_field f) {
  model::rule r;
  r.body.json = true;
  r.body.fields.push_back(std::move(f));
  return r;
}

TEST(ValidationCompile, EmptyRuleHasNoChecks) {
  const result res = compile(model::rule{});
  EXPECT_TRUE(res.errors.empty());
  EXPECT_FALSE(res.checks.any());
  EXPECT_FALSE(res.checks.needs_body());
}

TEST(ValidationCompile, SchemaExampleCompiles) {
  model::rule r;
  r.query.present = true;
  r.query.params = {{"per_page", "^[0-9]{1,3}$"}, {"page", ""}, {"after", "[a-z]+"}};
  r.query.required = {"per_page"};
  r.headers.required = {"X-Request-Id"};
  r.headers.forbidden = {"Cookie"};
  r.headers.patterns = {{"Content-Type", "^application/json(;.*)?$"}};
  r.body.max_bytes = 1 << 20;
  r.body.json = true;
  auto model_f = field("model", json_type::string);
  model_f.enum_values = {"small", "large"};
  model_f.required = true;
  auto tokens = field("max_tokens", json_type::integer);
  tokens.minimum = 1;
  tokens.maximum = 4096;
  auto name = field("user.name", json_type::string);
  name.pattern = "^[a-z]+$";
  name.max_length = 64;
  r.body.fields = {model_f, tokens, name};

  const result res = compile(r);
  ASSERT_TRUE(res.errors.empty()) << dump(res);
  const compiled_checks& c = res.checks;
  EXPECT_TRUE(c.any());
  EXPECT_TRUE(c.needs_body());
  ASSERT_TRUE(c.query.active);
  ASSERT_EQ(c.query.params.size(), 3u);  // sorted by name
  EXPECT_EQ(c.query.params[0].name, "after");
  EXPECT_EQ(c.query.params[1].name, "page");
  EXPECT_EQ(c.query.params[2].name, "per_page");
  EXPECT_EQ(c.query.params[1].pattern, nullptr);  // '' = any value
  ASSERT_NE(c.query.params[2].pattern, nullptr);
  EXPECT_TRUE(re2::RE2::FullMatch("123", *c.query.params[2].pattern));
  EXPECT_EQ(c.query.required, std::vector<std::string>{"per_page"});
  EXPECT_EQ(c.query.unknown, unknown_params::refuse);
  EXPECT_EQ(c.headers.required, std::vector<std::string>{"x-request-id"});
  EXPECT_EQ(c.headers.forbidden, std::vector<std::string>{"cookie"});
  ASSERT_EQ(c.headers.patterns.size(), 1u);
  EXPECT_EQ(c.headers.patterns[0].name, "content-type");
  EXPECT_EQ(c.body.max_bytes, 1u << 20);
  ASSERT_EQ(c.body.fields.size(), 3u);
  EXPECT_EQ(c.body.fields[0].name, "model");
  EXPECT_TRUE(c.body.fields[0].required);
  ASSERT_EQ(c.body.fields[0].enum_values.size(), 2u);
  EXPECT_EQ(c.body.fields[0].enum_values[1].text, "large");
  EXPECT_EQ(c.body.fields[1].minimum, 1.0);
  EXPECT_EQ(c.body.fields[1].maximum, 4096.0);
  EXPECT_EQ(c.body.fields[2].path, (std::vector<std::string>{"user", "name"}));
  EXPECT_EQ(c.body.fields[2].max_length, 64u);
  EXPECT_NE(c.body.fields[2].pattern, nullptr);
}

TEST(ValidationCompile, QueryIsActiveWhenAnythingIsSet) {
  model::rule r;
  r.query.present = true;  // `query: {}`: no parameter at all is allowed
  EXPECT_TRUE(compile(r).checks.query.active);
  model::rule r2;
  r2.query.params = {{"a", ""}};
  EXPECT_TRUE(compile(r2).checks.query.active);
}

TEST(ValidationCompile, BodyJsonFlag) {
  model::rule r;
  r.body.json = true;  // `json:` alone
  const result a = compile(r);
  EXPECT_TRUE(a.checks.body.json);
  EXPECT_TRUE(a.checks.needs_body());
  model::rule r2 = with_field(field("a"));
  r2.body.json = false;  // fields imply JSON even if the flag was forgotten
  EXPECT_TRUE(compile(r2).checks.body.json);
  model::rule r3;
  r3.body.max_bytes = 10;
  EXPECT_TRUE(compile(r3).checks.any());
  EXPECT_FALSE(compile(r3).checks.needs_body());
}

// ---- query -----------------------------------------------------------------------------------

TEST(ValidationCompile, QueryBadPattern) {
  model::rule r;
  r.query.params = {{"per_page", "^[0-9"}};
  expect_error(r, "query.params.per_page", "invalid regular expression");
}

TEST(ValidationCompile, QueryEmptyName) {
  model::rule r;
  r.query.params = {{"", "x"}};
  expect_error(r, "query.params.", "must not be empty");
}

TEST(ValidationCompile, QueryNameThatCanNeverMatch) {
  model::rule r;
  r.query.params = {{std::string("a\0b", 3), ""}};
  expect_error(r, std::string("query.params.a\0b", 16), "UTF-8 without NUL");
  model::rule r2;
  r2.query.params = {{"caf\xC3", ""}};
  expect_error(r2, "query.params.caf\xC3", "UTF-8 without NUL");
}

TEST(ValidationCompile, QueryDuplicateName) {
  model::rule r;
  r.query.params = {{"a", ""}, {"a", "x"}};
  expect_error(r, "query.params.a", "listed twice");
}

TEST(ValidationCompile, QueryRequiredNotListedWhileRefusing) {
  model::rule r;
  r.query.params = {{"a", ""}};
  r.query.required = {"a", "b"};
  expect_error(r, "query.required[1]", "unknown: refuse would refuse every request");
}

TEST(ValidationCompile, QueryRequiredNotListedWhileStripping) {
  model::rule r;
  r.query.unknown = unknown_params::strip;
  r.query.required = {"b"};
  expect_error(r, "query.required[0]", "unknown: strip would remove it");
}

TEST(ValidationCompile, QueryRequiredNotListedIsFineWhenAllowing) {
  model::rule r;
  r.query.unknown = unknown_params::allow;
  r.query.required = {"b"};
  const result res = compile(r);
  EXPECT_TRUE(res.errors.empty()) << dump(res);
  EXPECT_EQ(res.checks.query.required, std::vector<std::string>{"b"});
}

TEST(ValidationCompile, QueryRequiredEmptyOrTwice) {
  model::rule r;
  r.query.unknown = unknown_params::allow;
  r.query.required = {""};
  expect_error(r, "query.required[0]", "must not be empty");
  r.query.required = {"a", "a"};
  expect_error(r, "query.required[1]", "listed twice");
}

// ---- headers ---------------------------------------------------------------------------------

TEST(ValidationCompile, HeaderNamesMustBeTokens) {
  for (const std::string bad : {"", "Bad Header", "X:Y", "X-\xC3\xA9", "a\tb", "(x)", "a\"b"}) {
    model::rule r;
    r.headers.required = {"Ok", bad};
    expect_error(r, "headers.required[1]", "not a valid header name");
    model::rule f;
    f.headers.forbidden = {bad};
    expect_error(f, "headers.forbidden[0]", "not a valid header name");
    model::rule m;
    m.headers.patterns = {{bad, "x"}};
    expect_error(m, "headers.match." + bad, "not a valid header name");
  }
  model::rule ok;
  ok.headers.required = {"!#$%&'*+-.^_`|~09azAZ"};
  EXPECT_TRUE(compile(ok).errors.empty());
}

TEST(ValidationCompile, HeaderBothRequiredAndForbidden) {
  model::rule r;
  r.headers.required = {"X-Trace"};
  r.headers.forbidden = {"Cookie", "x-TRACE"};
  expect_error(r, "headers.forbidden[1]", "both required and forbidden");
}

TEST(ValidationCompile, HeaderListedTwiceIgnoringCase) {
  model::rule r;
  r.headers.required = {"X-A", "x-a"};
  expect_error(r, "headers.required[1]", "listed twice");
  model::rule f;
  f.headers.forbidden = {"Cookie", "COOKIE"};
  expect_error(f, "headers.forbidden[1]", "listed twice");
  model::rule m;
  m.headers.patterns = {{"Content-Type", "a"}, {"content-type", "b"}};
  expect_error(m, "headers.match.content-type", "listed twice");
}

TEST(ValidationCompile, HeaderPatternForForbiddenHeader) {
  model::rule r;
  r.headers.forbidden = {"cookie"};
  r.headers.patterns = {{"Cookie", "x"}};
  expect_error(r, "headers.match.Cookie", "forbidden, so its pattern never applies");
}

TEST(ValidationCompile, HeaderBadPattern) {
  model::rule r;
  r.headers.patterns = {{"Content-Type", "(application"}};
  expect_error(r, "headers.match.Content-Type", "invalid regular expression");
}

// ---- JSON fields -----------------------------------------------------------------------------

TEST(ValidationCompile, MalformedPaths) {
  for (const std::string bad : {"", ".", "a..b", ".a", "a.", "..", "a.b."}) {
    expect_error(with_field(field(bad)), "body.json." + bad, "malformed field path");
  }
}

TEST(ValidationCompile, PathDeeperThanBodiesMayBe) {
  std::string deep = "a";
  for (std::size_t i = 1; i < max_json_depth; ++i)
    deep += ".a";  // 64 segments
  expect_error(with_field(field(deep)), "body.json." + deep, "nested deeper");
  deep.resize(deep.size() - 2);  // 63 segments: the value sits in 63 objects
  EXPECT_TRUE(compile(with_field(field(deep))).errors.empty());
}

TEST(ValidationCompile, DuplicateField) {
  model::rule r = with_field(field("a.b"));
  r.body.fields.push_back(field("a.b", json_type::string));
  expect_error(r, "body.json.a.b", "listed twice");
}

TEST(ValidationCompile, PatternOnNonString) {
  for (json_type t : {json_type::number, json_type::integer, json_type::boolean, json_type::object,
                      json_type::array, json_type::null}) {
    auto f = field("n", t);
    f.pattern = "[0-9]+";
    expect_error(with_field(f), "body.json.n.pattern", "pattern applies to strings");
  }
}

TEST(ValidationCompile, MaxLengthOnNonStringOrArray) {
  for (json_type t : {json_type::number, json_type::integer, json_type::boolean, json_type::object,
                      json_type::null}) {
    auto f = field("n", t);
    f.max_length = 3;
    expect_error(with_field(f), "body.json.n.max_length", "applies to strings and arrays");
  }
  auto s = field("s", json_type::string);
  s.max_length = 3;
  auto a = field("a", json_type::array);
  a.max_length = 3;
  model::rule r = with_field(s);
  r.body.fields.push_back(a);
  EXPECT_TRUE(compile(r).errors.empty());
}

TEST(ValidationCompile, BoundsOnNonNumber) {
  for (json_type t : {json_type::string, json_type::boolean, json_type::object, json_type::array,
                      json_type::null}) {
    auto f = field("s", t);
    f.minimum = 1;
    expect_error(with_field(f), "body.json.s.minimum", "minimum applies to numbers");
    auto g = field("s", t);
    g.maximum = 1;
    expect_error(with_field(g), "body.json.s.maximum", "maximum applies to numbers");
  }
}

TEST(ValidationCompile, BoundsMustBeFinite) {
  auto f = field("n", json_type::number);
  f.minimum = std::numeric_limits<double>::quiet_NaN();
  expect_error(with_field(f), "body.json.n.minimum", "finite");
  auto g = field("n", json_type::number);
  g.maximum = std::numeric_limits<double>::infinity();
  expect_error(with_field(g), "body.json.n.maximum", "finite");
}

TEST(ValidationCompile, MinimumAboveMaximum) {
  auto f = field("n", json_type::integer);
  f.minimum = 10;
  f.maximum = 5;
  expect_error(with_field(f), "body.json.n.minimum", "minimum 10 is greater than maximum 5");
  f.maximum = 10;  // equal is fine: exactly one value
  EXPECT_TRUE(compile(with_field(f)).errors.empty());
}

TEST(ValidationCompile, ImpliedTypesThatConflict) {
  auto f = field("x");  // no type: the pattern says string, the bound says number
  f.pattern = "a+";
  f.minimum = 1;
  expect_error(with_field(f), "body.json.x.minimum", "no value can satisfy both");
  auto g = field("x");
  g.maximum = 5;
  g.max_length = 3;
  expect_error(with_field(g), "body.json.x.max_length", "no value can satisfy both");
  auto h = field("x");  // pattern and max_length both fit a string
  h.pattern = "a+";
  h.max_length = 3;
  EXPECT_TRUE(compile(with_field(h)).errors.empty());
}

TEST(ValidationCompile, EnumOnNonScalarType) {
  for (json_type t : {json_type::object, json_type::array, json_type::null}) {
    auto f = field("e", t);
    f.enum_values = {"a"};
    expect_error(with_field(f), "body.json.e.enum", "enum applies to strings, numbers");
  }
}

TEST(ValidationCompile, EnumValuesMustFitTheType) {
  struct bad_case {
    json_type type;
    std::string value;
    std::string words;
  };
  const bad_case cases[] = {
      {json_type::integer, "1.5", "not an integer"},
      {json_type::integer, "1.0", "not an integer"},
      {json_type::integer, "1e3", "not an integer"},
      {json_type::integer, "small", "not an integer"},
      {json_type::integer, "0x10", "not an integer"},
      {json_type::integer, "+5", "not an integer"},
      {json_type::integer, "007", "not an integer"},
      {json_type::integer, "18446744073709551616", "not an integer"},  // 2^64
      {json_type::number, "abc", "not a number"},
      {json_type::number, "1e999", "not a number"},  // not finite
      {json_type::number, ".5", "not a number"},
      {json_type::number, "NaN", "not a number"},
      {json_type::boolean, "yes", "not true or false"},
      {json_type::boolean, "True", "not true or false"},
      {json_type::boolean, "1", "not true or false"},
  };
  for (const auto& c : cases) {
    auto f = field("e", c.type);
    f.enum_values = {c.type == json_type::boolean ? "true" : "1", c.value};
    expect_error(with_field(f), "body.json.e.enum[1]", c.words);
  }
  auto any = field("e");  // with only a bound, the enum entries must be numbers
  any.maximum = 10;
  any.enum_values = {"1", "two"};
  expect_error(with_field(any), "body.json.e.enum[1]", "not a number");
}

TEST(ValidationCompile, EnumValuesParsedForEveryKind) {
  auto f = field("e");
  f.enum_values = {"small", "-9223372036854775808", "18446744073709551615", "2.5", "true", "0"};
  const result res = compile(with_field(f));
  ASSERT_TRUE(res.errors.empty()) << dump(res);
  const auto& e = res.checks.body.fields[0].enum_values;
  ASSERT_EQ(e.size(), 6u);
  EXPECT_FALSE(e[0].number || e[0].int64 || e[0].boolean);
  EXPECT_EQ(e[1].int64, std::numeric_limits<std::int64_t>::min());
  EXPECT_FALSE(e[1].uint64);
  EXPECT_EQ(e[2].uint64, std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(e[2].int64);
  EXPECT_EQ(e[3].number, 2.5);
  EXPECT_FALSE(e[3].int64);
  EXPECT_EQ(e[4].boolean, true);
  EXPECT_EQ(e[5].int64, 0);
  EXPECT_EQ(e[5].uint64, 0u);
}

TEST(ValidationCompile, BadJsonPattern) {
  auto f = field("s", json_type::string);
  f.pattern = "a{2,1}";
  expect_error(with_field(f), "body.json.s.pattern", "invalid regular expression");
}

TEST(ValidationCompile, FieldUnderAFieldThatCannotBeAnObject) {
  model::rule r = with_field(field("user", json_type::string));
  r.body.fields.push_back(field("user.name", json_type::string));
  expect_error(r, "body.json.user.name", "'user' cannot be an object");

  model::rule reversed = with_field(field("user.name", json_type::string));  // order is free
  reversed.body.fields.push_back(field("user", json_type::array));
  expect_error(reversed, "body.json.user.name", "'user' cannot be an object");

  auto patterned = field("a");  // no type, but a pattern makes it a string
  patterned.pattern = "x";
  model::rule implied = with_field(patterned);
  implied.body.fields.push_back(field("a.b.c"));
  expect_error(implied, "body.json.a.b.c", "'a' cannot be an object");

  model::rule fine = with_field(field("user", json_type::object));
  fine.body.fields.push_back(field("user.name", json_type::string));
  fine.body.fields.push_back(field("opts"));  // no type, no constraint: may be an object
  fine.body.fields.push_back(field("opts.t", json_type::number));
  fine.body.fields.push_back(field("username", json_type::string));  // not a path prefix
  const result res = compile(fine);
  EXPECT_TRUE(res.errors.empty()) << dump(res);
}

TEST(ValidationCompile, EveryMistakeIsReported) {
  model::rule r;
  r.query.params = {{"a", "("}};
  r.headers.required = {"bad name"};
  auto f = field("n", json_type::number);
  f.pattern = "x";
  auto g = field("a..b");
  r.body.fields = {f, g};
  const result res = compile(r);
  ASSERT_EQ(res.errors.size(), 4u) << dump(res);
  EXPECT_EQ(res.errors[0].first, "query.params.a");
  EXPECT_EQ(res.errors[1].first, "headers.required[0]");
  EXPECT_EQ(res.errors[2].first, "body.json.a..b");
  EXPECT_EQ(res.errors[3].first, "body.json.n.pattern");
}

}  // namespace
}  // namespace airlock::policy
