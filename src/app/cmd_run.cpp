// `airlock run [options] -- CMD ARGS`: run CMD confined, with the proxy as its only way out.
// Exit statuses follow timeout(1): CMD's own, or 124..127, 137 (see docs/launcher.md).
#include "app/commands.hpp"

#include "launcher/exit_codes.hpp"
#include "launcher/options.hpp"
#include "launcher/run.hpp"

#include <cstdio>

namespace airlock::app {

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
  return launcher::run(*parsed.value);
}

}  // namespace airlock::app
