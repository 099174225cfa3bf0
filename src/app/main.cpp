// The `airlock` command: dispatches to a subcommand (see commands.hpp).

#include "app/commands.hpp"

#include <openssl/crypto.h>

#include <csignal>
#include <cstdio>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view usage =
    "usage: airlock <command> [options]\n"
    "\n"
    "commands:\n"
    "  proxy   --config FILE [--threads N] [--listen ADDR] [--admin ADDR]\n"
    "                                 run the egress proxy\n"
    "  check   --config FILE          validate a policy file\n"
    "  explain --config FILE [--agent NAME] METHOD URL\n"
    "                                 show which rule decides a request, and why\n"
    "  ca      init|show [--dir DIR]  create or describe the interception CA\n"
    "  run     [options] -- CMD ARGS  run CMD confined, with the proxy as its only way out\n"
    "\n"
    "Run `airlock <command> --help` for a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away (a client, an upstream, a closed audit pipe) must be an error
  // code on that one write, not the death of the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(usage.data(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::puts("airlock " AIRLOCK_VERSION);
    // Which OpenSSL answers TLS: with AIRLOCK_STATIC_DEPS (cmake/StaticDeps.cmake) it is part of
    // the binary, and only a rebuild takes a security update of it.
    std::printf("%s (%s)\n", OpenSSL_version(OPENSSL_VERSION),
                AIRLOCK_OPENSSL_LINKED_STATICALLY ? "linked in: rebuild airlock to update it"
                                                  : "shared library");
    return 0;
  }
  const std::string_view command = args[0];
  airlock::app::args rest(args.data() + 1, args.size() - 1);
  if (command == "proxy") return airlock::app::cmd_proxy(rest);
  if (command == "check") return airlock::app::cmd_check(rest);
  if (command == "explain") return airlock::app::cmd_explain(rest);
  if (command == "ca") return airlock::app::cmd_ca(rest);
  if (command == "run") return airlock::app::cmd_run(rest);
  std::fprintf(stderr, "airlock: unknown command '%.*s'\n\n%s", static_cast<int>(command.size()),
               command.data(), usage.data());
  return 2;
}
