#pragma once
// The `airlock` subcommands. Each lives in its own cmd_<name>.cpp; main.cpp only dispatches.
// args excludes the program name and the subcommand itself. Each returns the process exit
// code and prints its own usage on bad arguments (exit 2).

#include <span>
#include <string_view>

namespace airlock::app {

using args = std::span<const std::string_view>;

int cmd_proxy(args a);    // airlock proxy --config FILE [--threads N] ...
int cmd_check(args a);    // airlock check --config FILE
int cmd_explain(args a);  // airlock explain --config FILE [--agent A] METHOD URL
int cmd_ca(args a);       // airlock ca init|show [--dir DIR]
int cmd_run(args a);      // airlock run [options] -- CMD ARGS

}  // namespace airlock::app
