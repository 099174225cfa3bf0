// `airlock check --config FILE`: load and compile a policy without running anything, so a
// policy can be validated in CI or before a reload.
#include "app/commands.hpp"

#include "policy/binaries.hpp"
#include "policy/loader.hpp"
#include "policy/model.hpp"
#include "policy/ports.hpp"
#include "tls/ca.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace airlock::app {
namespace {

constexpr const char* usage =
    "usage: airlock check --config FILE [--no-secrets]\n"
    "\n"
    "Loads the policy FILE and reports every error (file:line:column: key: message), then\n"
    "prints what each rule allows (hosts, ports, schemes).\n"
    "  --no-secrets  do not read secret values (environment variables, secret files, the CA\n"
    "                key): for CI pipelines where they do not exist. Everything else is checked.\n"
    "Exit status: 0 valid, 1 invalid, 2 usage error.\n";

}  // namespace

int cmd_check(args a) {
  std::string config;
  policy::load_options options;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string_view arg = a[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if ((arg == "--config" || arg == "-c") && i + 1 < a.size()) {
      config = a[++i];
    } else if (arg.starts_with("--config=")) {
      config = arg.substr(9);
    } else if (arg == "--no-secrets") {
      options.read_secrets = false;
    } else {
      std::fprintf(stderr, "airlock check: unexpected argument '%.*s'\n\n%s",
                   static_cast<int>(arg.size()), arg.data(), usage);
      return 2;
    }
  }
  if (config.empty()) {
    std::fprintf(stderr, "airlock check: --config FILE is required\n\n%s", usage);
    return 2;
  }
  const auto result = policy::load_file(config, options);
  for (const auto& w : result.warnings)
    std::fprintf(stderr, "warning: %s\n", w.to_string().c_str());
  if (!result.ok()) {
    for (const auto& e : result.errors)
      std::fprintf(stderr, "%s\n", e.to_string().c_str());
    return 1;
  }
  const auto& p = *result.policy;
  // The interception CA as the proxy loads it (parsed, key matching, a CA, valid now), so that
  // a policy `check` passes is one the proxy starts with.
  const auto& tls_files = p.model().tls;
  if (options.read_secrets && !tls_files.ca_cert.empty() && !tls_files.ca_key.empty()) {
    const auto ca = tls::certificate_authority::load(tls_files.ca_cert, tls_files.ca_key);
    for (const auto& w : ca.warnings)
      std::fprintf(stderr, "warning: %s: tls.ca_cert: %s\n", config.c_str(), w.c_str());
    if (!ca.ca) {
      std::fprintf(stderr, "%s: tls.ca_cert: %s\n", config.c_str(), ca.error.c_str());
      return 1;
    }
  }
  std::printf("%s: ok (%zu rules, %zu agents, version %s%s)\n", config.c_str(), p.rules().size(),
              p.agents().size(), p.version().substr(0, 12).c_str(),
              options.read_secrets ? "" : "; secrets not read");
  for (const auto& r : p.rules()) {
    const auto& schemes = r.source->schemes;
    const auto protocols = r.source->protocols;
    std::printf(
        "  rule %s: ports %s; schemes %s%s%s%s\n", r.name.c_str(),
        policy::ports_text(r.ports).c_str(), policy::schemes_text(schemes).c_str(),
        r.inspect ? "; inspect" : "",
        protocols == 0x7 ? "" : ("; protocols " + policy::protocols_text(protocols)).c_str(),
        r.binaries.empty() ? "" : ("; binaries " + policy::binaries_text(r.binaries)).c_str());
  }
  return 0;
}

}  // namespace airlock::app
