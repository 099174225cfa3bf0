// Placeholder until the component behind `airlock proxy` lands.
#include "app/commands.hpp"

#include <cstdio>

namespace airlock::app {

int cmd_proxy(args) {
  std::fputs("airlock proxy: not built yet\n", stderr);
  return 2;
}

}  // namespace airlock::app
