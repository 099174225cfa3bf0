// Placeholder until the component behind `airlock run` lands.
#include "app/commands.hpp"

#include <cstdio>

namespace airlock::app {

int cmd_run(args) {
  std::fputs("airlock run: not built yet\n", stderr);
  return 2;
}

}  // namespace airlock::app
