// A rule's JSON body checks (src/filters/validation/json_body.*) on any request body: the
// schema example of docs/policy.md (required enum string, bounded integer, nested string with
// a pattern and a length), a rule that only says `json: true`, and one with a deep path, a
// number range, an array length and a boolean/null type. Nothing may crash, read out of
// bounds or recurse without limit (the parser's depth limit, policy::max_json_depth).

#include "filters/validation/json_body.hpp"
#include "fuzz_input.hpp"
#include "policy/checks_compiler.hpp"

#include <string>
#include <utility>
#include <vector>

namespace airlock::fuzz {
namespace {

using policy::model::json_field;
using policy::model::json_type;

json_field field(std::string path, json_type type) {
  json_field f;
  f.path = std::move(path);
  f.type = type;
  return f;
}

policy::compiled_body compile(std::vector<json_field> fields) {
  policy::model::rule r;
  r.body.json = true;
  r.body.fields = std::move(fields);
  bool ok = true;
  auto c = policy::compile_checks(r, [&](const std::string&, std::string) { ok = false; });
  if (!ok) fail("fuzz schema does not compile");
  return c.body;
}

const std::vector<policy::compiled_body>& schemas() {
  static const std::vector<policy::compiled_body> all = [] {
    auto model = field("model", json_type::string);
    model.enum_values = {"small", "large"};
    model.required = true;
    auto tokens = field("max_tokens", json_type::integer);
    tokens.minimum = 1;
    tokens.maximum = 4096;
    auto name = field("user.name", json_type::string);
    name.pattern = "^[a-z]+$";
    name.max_length = 64;
    auto temp = field("options.sampling.temperature", json_type::number);
    temp.minimum = 0;
    temp.maximum = 2;
    auto tags = field("tags", json_type::array);
    tags.max_length = 4;
    auto any_enum = field("mode", json_type::any);
    any_enum.enum_values = {"1", "true", "x", "-9223372036854775808", "18446744073709551615"};
    std::vector<policy::compiled_body> v;
    v.push_back(compile({model, tokens, name}));
    v.push_back(compile({}));
    v.push_back(compile({temp, tags, any_enum, field("stream", json_type::boolean),
                         field("stop", json_type::null), field("meta", json_type::object)}));
    return v;
  }();
  return all;
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const auto& s : airlock::fuzz::schemas()) {
    if (auto v = airlock::filters::validation::check_json(s, body)) (void)v->detail();
  }
  return 0;
}
