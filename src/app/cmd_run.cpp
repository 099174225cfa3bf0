// `airlock run [options] -- CMD ARGS`: run CMD confined, with the proxy as its only way out.
// Exit statuses follow timeout(1): CMD's own, or 124..127, 137 (see docs/launcher.md).
#include "app/commands.hpp"

#include "launcher/exit_codes.hpp"
#include "launcher/options.hpp"
#include "launcher/run.hpp"
#include "policy/handoff.hpp"
#include "policy/loader.hpp"

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace airlock::app {

namespace {

// --policy FILE: hide the directories of the policy's secret files and CA key, of its audit log
// and of the policy itself; hand over each placeholder in its secret's variable unless --env
// sets that variable, and remove every other secret variable. The values are never read.
bool apply_policy(const std::string& path, launcher::options& options) {
  policy::load_options load;
  load.read_secrets = false;
  const auto loaded = policy::load_file(path, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "airlock run: --policy %s does not load:\n", path.c_str());
    for (const auto& e : loaded.errors)
      std::fprintf(stderr, "  %s\n", e.to_string().c_str());
    return false;
  }
  const auto handoff = policy::handoff_for_agent(*loaded.policy);
  for (const auto& h : handoff.hidden)
    options.hide_dir_of.push_back({h.path, h.why + " of --policy " + path, h.secret});
  // The policy itself says where the proxy's files are (and may name secrets inline).
  options.hide_dir_of.push_back({path, "--policy " + path, false});
  options.env_remove.insert(options.env_remove.end(), handoff.env_removed.begin(),
                            handoff.env_removed.end());
  for (const auto& [name, placeholder] : handoff.env) {
    const bool set_by_caller =
        std::any_of(options.env.begin(), options.env.end(),
                    [&](std::string_view e) { return e.substr(0, e.find('=')) == name; });
    if (!set_by_caller) options.env.push_back(name + "=" + placeholder);
  }
  return true;
}

}  // namespace

int cmd_run(args a) {
  const auto parsed = launcher::parse_options(a);
  if (!parsed.value) {
    // 125 rather than the usual 2: any other status could be CMD's own.
    std::fprintf(stderr, "airlock run: %s\nRun `airlock run --help` for the options.\n",
                 parsed.error.c_str());
    return launcher::exit_launcher_error;
  }
  if (parsed.value->help) {
    std::fwrite(launcher::usage().data(), 1, launcher::usage().size(), stdout);
    return 0;
  }
  auto options = *parsed.value;
  if (options.policy && !apply_policy(*options.policy, options))
    return launcher::exit_launcher_error;
  return launcher::run(options);
}

}  // namespace airlock::app
