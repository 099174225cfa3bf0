#pragma once
// The jail's file system (mount_namespaces(7)), executed from the plan's mount steps inside
// the new mount namespace: a read-only copy of / assembled under a staging directory, fresh
// /proc, /dev, /tmp and /run, the work directory and --rw paths writable, hidden paths covered,
// then pivot_root into it. Every step logs the failing call with errno and stops the run.

#include "launcher/plan.hpp"

#include <string>
#include <vector>

namespace airlock::launcher {

struct mount_context {
  std::string staging_root;  // empty host directory that becomes the jail's /
  std::string trust_dir;     // host directory with the CA bundle (mounted read-only)
  std::string masked_file;   // host file with mode 000, bound over hidden files
  std::string resolv_file;   // host file for the jail's resolv.conf; empty: that step is skipped
};

// Runs the steps in order; false (with the failure recorded) at the first that fails.
bool apply_mounts(const std::vector<mount_step>& steps, const mount_context& ctx);

// Makes the mount at path read-only (recursively: every mount below it too), keeping the
// flags the kernel locked when the mount came from a more privileged namespace.
bool make_read_only(const std::string& path, bool recursive);

}  // namespace airlock::launcher
