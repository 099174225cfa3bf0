// Placeholder until the component behind `airlock check` lands.
#include "app/commands.hpp"

#include <cstdio>

namespace airlock::app {

int cmd_check(args) {
  std::fputs("airlock check: not built yet\n", stderr);
  return 2;
}

}  // namespace airlock::app
