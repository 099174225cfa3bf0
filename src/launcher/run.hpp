#pragma once
// `airlock run`: executes a plan. The launcher (this process, in the host's namespaces)
// builds the trust bundle in memory, creates the jail's first process in new namespaces,
// writes its id maps, puts it in its cgroups, compiles its seccomp filter, relays its
// connections to the proxy, forwards signals and enforces the wall-clock limit. The jail's
// first process confines itself step by step (nsjail's contain.cc order, seccomp last) in a
// staging tmpfs of its own (mounts.hpp: nothing is written to the host's disk, so nothing is
// left to clean up there), becomes the PID namespace's init, and forks the command.
//
//   launcher                          jail init (PID 1)                 command (PID 2)
//   clone(NEWUSER|NEWNS|...) ───────► waits for `go`
//   uid_map, gid_map, cgroups
//   `go` (rlimit fallbacks) ────────► identity, hostname, lo up
//                           ◄──────── relay listener (SCM_RIGHTS)
//   compiles the seccomp filter       capture (nftables, routes, resolver socket)
//   `filter` (memfd) ───────────────► staging tmpfs, mounts, pivot_root,
//   relay thread starts               caps, no_new_privs, seccomp (the launcher's program)
//                           ◄──────── `ready`                 fork ──► rlimits, execve(CMD)
//   wait, forward signals ──────────► forward to the command
//   timeout: SIGKILL init (the kernel then kills every process in the namespace)

#include "launcher/options.hpp"

namespace airlock::launcher {

// Runs o.command confined and returns the exit status for `airlock run` (exit_codes.hpp).
// Every launcher error prints one line "airlock run: <reason>" on stderr.
int run(const options& o);

}  // namespace airlock::launcher
