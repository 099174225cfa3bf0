// Placeholder until the component behind `airlock explain` lands.
#include "app/commands.hpp"

#include <cstdio>

namespace airlock::app {

int cmd_explain(args) {
  std::fputs("airlock explain: not built yet\n", stderr);
  return 2;
}

}  // namespace airlock::app
