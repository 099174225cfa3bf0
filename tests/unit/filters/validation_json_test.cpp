#include "filters/validation/json_body.hpp"

#include "policy/checks_compiler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace airlock::filters::validation {
namespace {

using policy::model::json_field;
using policy::model::json_type;

json_field field(std::string path, json_type type = json_type::any) {
  json_field f;
  f.path = std::move(path);
  f.type = type;
  return f;
}

policy::compiled_body compile(std::vector<json_field> fields) {
  policy::model::rule r;
  r.body.json = true;
  r.body.fields = std::move(fields);
  std::string errors;
  auto c = policy::compile_checks(
      r, [&](const std::string& key, std::string message) { errors += key + ": " + message; });
  EXPECT_EQ(errors, "");
  return c.body;
}

// The schema's example.
policy::compiled_body example() {
  auto model = field("model", json_type::string);
  model.enum_values = {"small", "large"};
  model.required = true;
  auto tokens = field("max_tokens", json_type::integer);
  tokens.minimum = 1;
  tokens.maximum = 4096;
  auto name = field("user.name", json_type::string);
  name.pattern = "^[a-z]+$";
  name.max_length = 64;
  return compile({model, tokens, name});
}

void expect_pass(const policy::compiled_body& b, std::string_view body) {
  auto v = check_json(b, body);
  EXPECT_FALSE(v) << body << ": " << v->detail();
}

void expect_refused(const policy::compiled_body& b, std::string_view body,
                    const std::string& parameter, const std::string& constraint) {
  auto v = check_json(b, body);
  ASSERT_TRUE(v) << body;
  EXPECT_EQ(v->reason, core::errc::body_denied);
  EXPECT_EQ(v->parameter, parameter) << body;
  EXPECT_EQ(v->constraint, constraint) << body;
}

TEST(ValidationJson, NoChecksPassesAnything) {
  EXPECT_FALSE(check_json(policy::compiled_body{}, "not json {{{"));
  policy::compiled_body size_only;
  size_only.max_bytes = 3;  // the size limit is the caller's (413), not this check's
  EXPECT_FALSE(check_json(size_only, "not json"));
}

TEST(ValidationJson, JsonWithoutFieldsAcceptsAnyDocument) {
  const auto b = compile({});
  for (const char* ok : {"{}", "[1,2]", "3", "\"s\"", "null", " \n{\"a\":[{}]}\t "})
    expect_pass(b, ok);
  for (const char* bad :
       {"", " ", "{", "{\"a\":}", "{} {}", "{}x", "[1,]", "{\"a\":1,}", "{/* c */}", "// c\n{}",
        "\xEF\xBB\xBF{}", "{'a':1}", "NaN", "[Infinity]", "{\"a\":01}", "\"\\x41\""}) {
    expect_refused(b, bad, "body", "valid JSON");
  }
  EXPECT_EQ(check_json(b, "{")->detail(), "body is not valid JSON");
}

TEST(ValidationJson, ValidRequestPasses) {
  const auto b = example();
  expect_pass(b, R"({"model":"small"})");
  expect_pass(b, R"({"model":"large","max_tokens":4096,"user":{"name":"alice"},"extra":[1]})");
  expect_pass(b, R"({"model":"small","user":{}})");  // user.name is optional
}

TEST(ValidationJson, RootMustBeAnObjectWhenFieldsAreGiven) {
  const auto b = example();
  for (const char* body : {"[]", "\"model\"", "1", "null", "[{\"model\":\"small\"}]"})
    expect_refused(b, body, "body", "type object");
  EXPECT_EQ(check_json(b, "[]")->detail(), "body is not of type object");
}

TEST(ValidationJson, Required) {
  const auto b = example();
  expect_refused(b, "{}", "body field model", "required");
  expect_refused(b, R"({"max_tokens":1})", "body field model", "required");
  EXPECT_EQ(check_json(b, "{}")->detail(), "body field 'model' is missing");
  auto nested = field("a.b");
  nested.required = true;
  const auto n = compile({nested});
  expect_refused(n, "{}", "body field a.b", "required");  // missing parent: missing field
  expect_refused(n, R"({"a":{}})", "body field a.b", "required");
  expect_pass(n, R"({"a":{"b":null}})");  // present, even as null
}

TEST(ValidationJson, Types) {
  struct type_case {
    json_type type;
    std::vector<const char*> good;
    std::vector<const char*> bad;
    const char* name;
  };
  const type_case cases[] = {
      {json_type::string, {"\"\"", "\"x\""}, {"1", "true", "null", "[]", "{}"}, "string"},
      {json_type::number,
       {"0", "-1", "1.5", "1e3", "18446744073709551615", "1e300"},
       {"\"1\"", "true", "null", "[1]", "{}", "1e400", "-1e400"},
       "number"},
      {json_type::integer,
       {"0", "-0", "42", "-9223372036854775808", "18446744073709551615"},
       {"3.0", "3e0", "1.5", "18446744073709551616", "-9223372036854775809", "\"3\"", "true"},
       "integer"},
      {json_type::boolean, {"true", "false"}, {"0", "\"true\"", "null"}, "boolean"},
      {json_type::object, {"{}", "{\"a\":1}"}, {"[]", "null", "\"{}\""}, "object"},
      {json_type::array, {"[]", "[1,\"a\"]"}, {"{}", "null", "\"[]\""}, "array"},
      {json_type::null, {"null"}, {"0", "false", "\"\"", "{}"}, "null"},
  };
  for (const auto& c : cases) {
    const auto b = compile({field("v", c.type)});
    for (const char* good : c.good)
      expect_pass(b, std::string("{\"v\":") + good + "}");
    for (const char* bad : c.bad)
      expect_refused(b, std::string("{\"v\":") + bad + "}", "body field v",
                     std::string("type ") + c.name);
    expect_pass(b, "{}");  // optional
  }
  const auto i = compile({field("max_tokens", json_type::integer)});
  EXPECT_EQ(check_json(i, R"({"max_tokens":3.0})")->detail(),
            "body field 'max_tokens' is not of type integer");
}

TEST(ValidationJson, Pattern) {
  const auto b = example();
  expect_pass(b, R"({"model":"small","user":{"name":"bob"}})");
  expect_refused(b, R"({"model":"small","user":{"name":"Bob"}})", "body field user.name",
                 "pattern ^[a-z]+$");
  expect_refused(b, R"({"model":"small","user":{"name":""}})", "body field user.name",
                 "pattern ^[a-z]+$");
  auto v = check_json(b, R"({"model":"small","user":{"name":"sk-SECRET123"}})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail(), "body field 'user.name' breaks pattern '^[a-z]+$'");
  EXPECT_EQ(v->detail().find("SECRET"), std::string::npos);
  // Full match without anchors; an untyped field with a pattern must be a string.
  auto loose = field("id");
  loose.pattern = "[0-9]+";
  const auto l = compile({loose});
  expect_pass(l, R"({"id":"123"})");
  expect_refused(l, R"({"id":"123x"})", "body field id", "pattern [0-9]+");
  expect_refused(l, R"({"id":123})", "body field id", "type string");
  expect_refused(l, R"({"id":["1"]})", "body field id", "type string");
  // Unescaped before matching; NUL and newlines are ordinary characters to the pattern.
  expect_pass(l, R"({"id":"\u0031\u0032"})");
  expect_refused(l, R"({"id":"1\u00002"})", "body field id", "pattern [0-9]+");
  expect_refused(l, R"({"id":"1\n"})", "body field id", "pattern [0-9]+");
}

TEST(ValidationJson, EnumStrings) {
  const auto b = example();
  expect_pass(b, R"({"model":"large"})");
  expect_refused(b, R"({"model":"huge"})", "body field model", "enum");
  expect_refused(b, R"({"model":"Small"})", "body field model", "enum");
  expect_refused(b, R"({"model":"small "})", "body field model", "enum");
  expect_refused(b, R"({"model":1})", "body field model", "type string");
  expect_pass(b, R"({"model":"\u0073mall"})");
  EXPECT_EQ(check_json(b, R"({"model":"huge"})")->detail(), "body field 'model' breaks enum");
}

TEST(ValidationJson, EnumIntegers) {
  auto f = field("n", json_type::integer);
  f.enum_values = {"1", "-2", "9007199254740993", "18446744073709551615"};
  const auto b = compile({f});
  for (const char* ok : {"1", "-2", "9007199254740993", "18446744073709551615"})
    expect_pass(b, std::string("{\"n\":") + ok + "}");
  // 2^53 + 2 and 2^53 + 1 are the same double; integers compare exactly.
  for (const char* bad : {"2", "0", "9007199254740992", "9007199254740994", "18446744073709551614"})
    expect_refused(b, std::string("{\"n\":") + bad + "}", "body field n", "enum");
  expect_refused(b, R"({"n":1.0})", "body field n", "type integer");
  expect_refused(b, R"({"n":"1"})", "body field n", "type integer");
}

TEST(ValidationJson, EnumNumbersAndBooleans) {
  auto num = field("x", json_type::number);
  num.enum_values = {"2", "0.5", "1e2"};
  const auto n = compile({num});
  for (const char* ok : {"2", "2.0", "0.5", "5e-1", "100", "1e2"})
    expect_pass(n, std::string("{\"x\":") + ok + "}");
  for (const char* bad : {"3", "0.25", "\"2\""})
    expect_refused(n, std::string("{\"x\":") + bad + "}", "body field x",
                   bad[0] == '"' ? "type number" : "enum");

  auto flag = field("stream", json_type::boolean);
  flag.enum_values = {"false"};
  const auto f = compile({flag});
  expect_pass(f, R"({"stream":false})");
  expect_refused(f, R"({"stream":true})", "body field stream", "enum");
  expect_refused(f, R"({"stream":"false"})", "body field stream", "type boolean");
  expect_refused(f, R"({"stream":0})", "body field stream", "type boolean");
}

TEST(ValidationJson, EnumWithoutTypeMatchesByKind) {
  auto any = field("v");
  any.enum_values = {"small", "1", "true"};
  const auto b = compile({any});
  for (const char* ok : {"\"small\"", "\"1\"", "1", "1.0", "true", "\"true\""})
    expect_pass(b, std::string("{\"v\":") + ok + "}");
  for (const char* bad : {"\"big\"", "2", "false", "null", "[]", "{}", "[\"small\"]"})
    expect_refused(b, std::string("{\"v\":") + bad + "}", "body field v", "enum");
}

TEST(ValidationJson, MaxLength) {
  const auto b = example();
  const std::string name64(64, 'a');
  expect_pass(b, R"({"model":"small","user":{"name":")" + name64 + "\"}}");
  expect_refused(b, R"({"model":"small","user":{"name":")" + name64 + "a\"}}",
                 "body field user.name", "max_length 64");
  // Code points, not bytes; escapes count once.
  auto s = field("s", json_type::string);
  s.max_length = 3;
  const auto sb = compile({s});
  expect_pass(sb, "{\"s\":\"\xC3\xA9\xC3\xA9\xF0\x9F\x98\x80\"}");  // 3 characters, 8 bytes
  expect_pass(sb, R"({"s":"\u00e9\ud83d\ude00x"})");
  expect_refused(sb, R"({"s":"abcd"})", "body field s", "max_length 3");
  // Elements of an array.
  auto a = field("a");
  a.max_length = 2;
  const auto ab = compile({a});
  expect_pass(ab, R"({"a":[1,[2,3,4]]})");
  expect_pass(ab, R"({"a":"ab"})");
  expect_refused(ab, R"({"a":[1,2,3]})", "body field a", "max_length 2");
  expect_refused(ab, R"({"a":{"x":1,"y":2,"z":3}})", "body field a", "type string or array");
  expect_refused(ab, R"({"a":12345})", "body field a", "type string or array");
}

TEST(ValidationJson, MinimumAndMaximum) {
  const auto b = example();
  expect_pass(b, R"({"model":"small","max_tokens":1})");
  expect_pass(b, R"({"model":"small","max_tokens":4096})");
  expect_refused(b, R"({"model":"small","max_tokens":0})", "body field max_tokens", "minimum 1");
  expect_refused(b, R"({"model":"small","max_tokens":4097})", "body field max_tokens",
                 "maximum 4096");
  expect_refused(b, R"({"model":"small","max_tokens":-9223372036854775808})",
                 "body field max_tokens", "minimum 1");
  expect_refused(b, R"({"model":"small","max_tokens":18446744073709551615})",
                 "body field max_tokens", "maximum 4096");
  EXPECT_EQ(check_json(b, R"({"model":"small","max_tokens":4097})")->detail(),
            "body field 'max_tokens' breaks maximum 4096");

  auto t = field("t");  // untyped with bounds: must be a finite number
  t.minimum = -0.5;
  t.maximum = 2.5;
  const auto tb = compile({t});
  for (const char* ok : {"-0.5", "0", "2", "2.5", "25e-1"})
    expect_pass(tb, std::string("{\"t\":") + ok + "}");
  for (const char* bad : {"-1", "3", "2.5000001", "1e308"})
    expect_refused(tb, std::string("{\"t\":") + bad + "}", "body field t",
                   bad[0] == '-' ? "minimum -0.5" : "maximum 2.5");
  for (const char* bad : {"\"1\"", "true", "null", "[1]", "1e400", "-1e400"})
    expect_refused(tb, std::string("{\"t\":") + bad + "}", "body field t", "type number");
}

TEST(ValidationJson, BoundsCompareHugeIntegersExactly) {
  auto f = field("n", json_type::integer);
  f.maximum = 9007199254740992.0;  // 2^53
  f.minimum = -9007199254740992.0;
  const auto b = compile({f});
  expect_pass(b, R"({"n":9007199254740992})");
  // As doubles these round to 2^53 and would pass.
  expect_refused(b, R"({"n":9007199254740993})", "body field n", "maximum 9007199254740992");
  expect_refused(b, R"({"n":-9007199254740993})", "body field n", "minimum -9007199254740992");
  expect_refused(b, R"({"n":18446744073709551615})", "body field n", "maximum 9007199254740992");

  auto g = field("n", json_type::integer);
  g.maximum = 9223372036854775807.0;  // rounds to 2^63
  const auto gb = compile({g});
  expect_pass(gb, R"({"n":9223372036854775807})");
  expect_pass(gb, R"({"n":9223372036854775808})");  // uint64 2^63 equals the bound
  expect_refused(gb, R"({"n":9223372036854775809})", "body field n", "maximum 9223372036854775808");

  auto h = field("n", json_type::integer);
  h.minimum = 0.5;
  h.maximum = 1.5;
  const auto hb = compile({h});
  expect_pass(hb, R"({"n":1})");
  expect_refused(hb, R"({"n":0})", "body field n", "minimum 0.5");
  expect_refused(hb, R"({"n":2})", "body field n", "maximum 1.5");
}

TEST(ValidationJson, HugeNumbers) {
  const auto b = compile({field("n", json_type::number)});
  expect_refused(b, R"({"n":1e400})", "body field n", "type number");  // parses as infinity
  expect_refused(b, R"({"n":1e99999999999999999999})", "body", "valid JSON");
  const std::string digits(300, '9');        // about 1e300
  expect_pass(b, "{\"n\":" + digits + "}");  // a finite double
  expect_refused(compile({field("n", json_type::integer)}), "{\"n\":" + digits + "}",
                 "body field n", "type integer");
}

TEST(ValidationJson, NestedFields) {
  const auto b = example();
  expect_refused(b, R"({"model":"small","user":"bob"})", "body field user", "type object");
  expect_refused(b, R"({"model":"small","user":null})", "body field user", "type object");
  expect_refused(b, R"({"model":"small","user":[{"name":"Bob"}]})", "body field user",
                 "type object");
  expect_pass(b, R"({"model":"small","user":{"name":"bob","other":{"x":[1]}}})");
  auto deep = field("a.b.c.d", json_type::integer);
  deep.maximum = 1;
  const auto d = compile({deep});
  expect_pass(d, R"({"a":{"b":{"c":{"d":1}}}})");
  expect_refused(d, R"({"a":{"b":{"c":{"d":2}}}})", "body field a.b.c.d", "maximum 1");
  expect_refused(d, R"({"a":{"b":5}})", "body field a.b", "type object");
  // The path is a path, not a key with dots in it.
  expect_pass(d, R"({"a.b.c.d":5})");
}

TEST(ValidationJson, DuplicateKeysAreRefused) {
  const auto b = example();
  // Boost.JSON would keep the last; another origin might use the first.
  expect_refused(b, R"({"model":"small","model":"huge"})", "body field model", "duplicate key");
  expect_refused(b, R"({"model":"huge","model":"small"})", "body field model", "duplicate key");
  // Escapes are decoded before comparing.
  expect_refused(b, R"({"model":"small","mo\u0064el":"huge"})", "body field model",
                 "duplicate key");
  // Anywhere in the document, however deep and whichever object.
  expect_refused(b, R"({"model":"small","user":{"name":"a","name":"B"}})", "body field name",
                 "duplicate key");
  expect_refused(b, R"({"model":"small","x":[{"k":1},{"a":1,"k":2,"k":3}]})", "body field k",
                 "duplicate key");
  expect_refused(b, R"({"":1,"":2,"model":"small"})", "body field ", "duplicate key");
  EXPECT_EQ(check_json(b, R"({"model":"small","model":"huge"})")->detail(),
            "body field 'model' appears more than once");
  // The same key in sibling objects is fine.
  expect_pass(b, R"({"model":"small","x":[{"k":1},{"k":2}],"y":{"k":{"k":3}}})");
  const auto any = compile({});
  expect_refused(any, R"([{"a":1,"a":1}])", "body field a", "duplicate key");
}

TEST(ValidationJson, UnicodeEscapesInKeys) {
  const auto b = example();
  expect_pass(b, R"({"mo\u0064el":"large"})");
  expect_refused(b, R"({"mo\u0064el":"huge"})", "body field model", "enum");
  expect_refused(b, R"({"\u006d\u006f\u0064\u0065\u006c":"huge"})", "body field model", "enum");
  expect_refused(b, R"({"model":"small","\u0075ser":{"n\u0061me":"X"}})", "body field user.name",
                 "pattern ^[a-z]+$");
  // U+0000 in a key: a C-string origin would see "model".
  expect_refused(b, R"({"model\u0000x":"huge","model":"small"})", "body", "encoding");
  // Lone surrogates and invalid UTF-8 are not valid JSON text.
  expect_refused(b, R"({"model":"small","\ud800":1})", "body", "valid JSON");
  expect_refused(b, "{\"model\":\"small\",\"\xC0\xAF\":1}", "body", "valid JSON");
  expect_refused(b, "{\"model\":\"sm\xED\xA0\x80\"}", "body", "valid JSON");
}

TEST(ValidationJson, CaseVariantsOfConstrainedKeysAreRefused) {
  // Go's encoding/json binds "MODEL" (and the last of several variants) to a field `model`.
  const auto b = example();
  expect_refused(b, R"({"MODEL":"huge"})", "body field model", "exact name");
  expect_refused(b, R"({"model":"small","Model":"huge"})", "body field model", "exact name");
  expect_refused(b, R"({"Model":"huge","model":"small"})", "body field model", "exact name");
  expect_refused(b, R"({"model":"small","USER":{"name":"X"}})", "body field user", "exact name");
  expect_refused(b, R"({"model":"small","user":{"NAME":"X"}})", "body field user.name",
                 "exact name");
  // U+212A KELVIN SIGN and U+017F LONG S fold to ASCII k and s.
  auto kind = field("kind", json_type::string);
  kind.enum_values = {"a"};
  auto stream = field("stream", json_type::boolean);
  stream.enum_values = {"false"};
  const auto k = compile({kind, stream});
  expect_refused(k, R"({"\u212aind":"b"})", "body field kind", "exact name");
  expect_refused(k, R"({"\u017ftream":true})", "body field stream", "exact name");
  EXPECT_EQ(check_json(k, R"({"\u212aind":"b"})")->detail(),
            "body field 'kind' must be spelt exactly (a case variant was sent)");
  // Unconstrained keys may use any case.
  expect_pass(b, R"({"model":"small","Other":1,"OTHER":2,"user":{"Age":3}})");
}

TEST(ValidationJson, DeepNesting) {
  const auto any = compile({});
  auto nest = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  expect_pass(any, nest(policy::max_json_depth));
  expect_refused(any, nest(policy::max_json_depth + 1), "body", "max depth 64");
  EXPECT_EQ(check_json(any, nest(65))->detail(), "body is nested deeper than 64 levels");
  // A megabyte of '[' fails fast, without deep recursion.
  const auto start = std::chrono::steady_clock::now();
  expect_refused(any, std::string(1 << 20, '['), "body", "max depth 64");
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  expect_refused(any, objects, "body", "max depth 64");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ValidationJson, ManyKeysStayFast) {
  // Duplicate detection sorts each object's keys: 100 000 keys take well under a second.
  const auto b = example();
  std::string body = "{\"model\":\"small\"";
  for (int i = 0; i < 100000; ++i)
    body += ",\"k" + std::to_string(i) + "\":" + std::to_string(i);
  const auto start = std::chrono::steady_clock::now();
  expect_pass(b, body + "}");
  expect_refused(b, body + ",\"k99999\":0}", "body field k99999", "duplicate key");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ValidationJson, FirstViolationInFieldOrder) {
  const auto b = example();
  expect_refused(b, R"({"model":"huge","max_tokens":0})", "body field model", "enum");
  expect_refused(b, R"({"max_tokens":0})", "body field model", "required");
}

}  // namespace
}  // namespace airlock::filters::validation
