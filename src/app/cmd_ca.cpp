// Placeholder until the component behind `airlock ca` lands.
#include "app/commands.hpp"

#include <cstdio>

namespace airlock::app {

int cmd_ca(args) {
  std::fputs("airlock ca: not built yet\n", stderr);
  return 2;
}

}  // namespace airlock::app
