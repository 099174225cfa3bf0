#pragma once
// The jail's file system (mount_namespaces(7)), executed from the plan's mount steps inside
// the new mount namespace: a read-only copy of / assembled in a private staging tmpfs, fresh
// /proc, /dev, /tmp and /run, the work directory and --rw paths writable, hidden paths covered,
// then pivot_root into it. Every step logs the failing call with errno and stops the run.

#include "launcher/plan.hpp"

#include <string>
#include <vector>

namespace airlock::launcher {

// A file the jail's staging tmpfs gets before anything else is mounted: the trust bundle,
// the resolver's resolv.conf. The launcher builds these in memory; nothing is written to the
// host's disk, so nothing is left to remove there when the jail ends.
struct staged_file {
  std::string path;     // relative to the staging tmpfs ("trust/ca-bundle.crt")
  std::string content;  // ignored when link_to or bind_from is set
  std::string link_to;  // non-empty: a hard link to this earlier path instead of a copy
  // Non-empty: the host's file at this canonical path, bound (not copied) over an empty file;
  // read-only once the directory holding it is mounted read-only.
  std::string bind_from;
};

// Where apply_mounts assembles the jail (bubblewrap's layout): a fresh tmpfs becomes the root
// of the mount namespace, with the host's root below it at host_root and the jail's root being
// built at staging_root; the final pivot_root detaches the tmpfs and the host's tree alike.
// The tmpfs outlives that only through the read-only binds of its files.
struct mount_context {
  std::vector<staged_file> files;
  std::string staging_root = "/newroot";  // becomes the jail's /
  std::string host_root = "/oldroot";     // the host's / while the jail is assembled
  std::string trust_dir = "/trust";       // the staged trust files (mounted read-only)
  std::string masked_file = "/masked";    // mode 000, bound over hidden files
  std::string resolv_file;  // a staged file for the jail's resolv.conf; empty: step skipped
};

// What apply_mounts could not do but did not fail for.
struct mount_outcome {
  bool home_layered = false;  // the home_layer step's overlay is mounted
  // Hidden paths not there yet whose mount point could not be made (no home layer): a
  // credential store created there while the jail runs would be visible.
  std::vector<std::string> uncovered;
};

// Runs the steps in order; false (with the failure recorded) at the first that fails.
bool apply_mounts(const std::vector<mount_step>& steps, const mount_context& ctx,
                  mount_outcome* outcome = nullptr);

// Makes the mount at path read-only (recursively: every mount below it too), keeping the
// flags the kernel locked when the mount came from a more privileged namespace. `via`, when
// given, is what the calls are handed instead of path: /proc/self/fd/N of the mount's root
// (path_walk.hpp), so that a link swapped into path cannot send them elsewhere.
bool make_read_only(const std::string& path, bool recursive, const std::string& via = {});

// Makes the mount at path nosuid and nodev, recursively where the kernel can (Linux 5.12).
bool make_nosuid(const std::string& path, const std::string& via = {});

}  // namespace airlock::launcher
