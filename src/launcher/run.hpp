#pragma once
// `airlock run`: executes a plan. The launcher (this process, in the host's namespaces)
// prepares the private directory and the trust bundle, creates the jail's first process in
// new namespaces, writes its id maps, puts it in its cgroups, relays its connections to the
// proxy, forwards signals, enforces the wall-clock limit and cleans up. The jail's first
// process confines itself step by step (nsjail's contain.cc order, seccomp last), becomes the
// PID namespace's init, and forks the command.
//
//   launcher                          jail init (PID 1)                 command (PID 2)
//   clone(NEWUSER|NEWNS|...) ───────► waits for `go`
//   uid_map, gid_map, cgroups
//   `go` (rlimit fallbacks) ────────► identity, hostname, lo up
//                           ◄──────── relay listener (SCM_RIGHTS)
//   relay thread starts               mounts, pivot_root,
//                                     caps, no_new_privs, seccomp
//                           ◄──────── `ready`                 fork ──► rlimits, execve(CMD)
//   wait, forward signals ──────────► forward to the command
//   timeout: SIGKILL init (the kernel then kills every process in the namespace)

#include "launcher/options.hpp"

namespace airlock::launcher {

// Runs o.command confined and returns the exit status for `airlock run` (exit_codes.hpp).
// Every launcher error prints one line "airlock run: <reason>" on stderr.
int run(const options& o);

}  // namespace airlock::launcher
