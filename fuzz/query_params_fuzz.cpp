// Credential injection into a query (src/filters/credentials/query_params.*) on any request
// target an agent sends: the proxy removes the agent's own parameters of the injected name,
// then appends the real one. If a parameter that an origin could read as the injected name
// survived the removal, the agent would choose which value a lenient origin uses (HTTP
// parameter pollution) or read the secret back through its own parameter.
//
// Properties:
//   - after remove_query_param(target, name), no parameter left decodes (as a form does) to a
//     name equal to `name` or one a lenient origin reads as it (validation::lenient_name_equal);
//   - what is left is the target's parameters in their order, minus some: nothing is invented
//     or rewritten, and the path is untouched;
//   - after append_query_param(target, name, value), the last parameter decodes to exactly
//     `name` and `value`, and the ones before it are the target's.
//
// Input: byte 0 picks the name, the rest up to the first NUL is the target, the rest the value.

#include "filters/credentials/query_params.hpp"
#include "filters/validation/text.hpp"
#include "fuzz_input.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::fuzz {
namespace {

constexpr std::array<std::string_view, 4> kNames{"api_key", "token", "key", "X-Api.Key"};

std::vector<std::string_view> params(std::string_view target) {
  std::vector<std::string_view> out;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return out;
  const std::string_view query = target.substr(q + 1);
  for (std::size_t start = 0; start <= query.size();) {
    auto end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    out.push_back(query.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock::fuzz;
  namespace credentials = airlock::filters::credentials;
  namespace validation = airlock::filters::validation;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string_view name = kNames[take_byte(in) % kNames.size()];
  const auto nul = in.find('\0');
  const std::string original(in.substr(0, nul));
  const std::string_view value = nul == std::string_view::npos ? "" : in.substr(nul + 1);

  std::string target = original;
  credentials::remove_query_param(target, name);
  if (path_of(target) != path_of(original)) fail("the path changed");
  const auto before = params(original), after = params(target);
  std::size_t k = 0;
  std::string buf;
  for (const auto p : after) {
    while (k < before.size() && before[k] != p)
      ++k;
    if (k++ == before.size()) fail("a parameter was invented or rewritten");
    const auto raw = p.substr(0, p.find('='));
    if (const auto decoded = validation::form_decode(raw, buf))
      if (*decoded == name || validation::lenient_name_equal(*decoded, name))
        fail("a parameter an origin reads as the injected name survived");
  }

  const std::vector<std::string> kept(after.begin(), after.end());  // views into `target`
  credentials::append_query_param(target, name, value);
  const auto appended = params(target);
  if (appended.empty() || appended.size() != kept.size() + 1) fail("not one parameter added");
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (appended[i] != kept[i]) fail("appending changed a parameter before it");
  const auto last = appended.back();
  const auto eq = last.find('=');
  std::string name_buf, value_buf;
  const auto n = validation::form_decode(last.substr(0, eq), name_buf);
  const auto v = validation::form_decode(last.substr(eq + 1), value_buf);
  // form_decode refuses a NUL or invalid UTF-8, which a value from the input may hold; the
  // encoding is then checked byte for byte instead.
  if (!n || *n != name) fail("the appended name does not decode to itself");
  if (v ? *v != value : last.substr(eq + 1) != credentials::percent_encode(value))
    fail("the appended value does not decode to itself");
  return 0;
}
