// The policy loader (src/policy: YAML parser, checks, compiler) on any file text, as
// `airlock check` and a reload read it. Secrets are not read (no environment, no files), as
// `airlock check --no-secrets` does. A policy that loads is then asked about a few requests
// through explain(), which runs decide() on every agent. Properties: a load either gives a
// snapshot and no errors, or errors and no snapshot; every error names a line within the text.

#include "fuzz_input.hpp"
#include "policy/explain.hpp"
#include "policy/loader.hpp"

#include <algorithm>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  using fuzz::fail;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  policy::load_options options;
  options.read_secrets = false;
  const auto r = policy::load_string(text, "/nonexistent/fuzz/policy.yaml", options);
  if (r.ok() != r.errors.empty()) fail("snapshot and errors disagree");
  const auto lines = 1 + std::count(text.begin(), text.end(), '\n');
  for (const auto& e : r.errors) {
    if (e.line < 0 || e.line > lines + 1) fail("error line outside the text");
    (void)e.to_string();
  }
  if (!r.ok()) return 0;
  static constexpr std::string_view requests[][2] = {
      {"GET", "http://example.com/"}, {"POST", "http://api.example.com:8080/v1/x?q=1"},
      {"CONNECT", "example.com:443"}, {"GET", "https://10.0.0.1:8443/a"},
      {"GET", "http://[::1]/"},
  };
  for (const auto& agent : r.policy->agents()) {
    for (const auto& req : requests) {
      policy::explain_request q;
      q.agent = agent.name;
      q.method = req[0];
      q.url = req[1];
      (void)policy::explain(*r.policy, q);
    }
  }
  return 0;
}
