#pragma once
// Mount sources and targets opened without following symlinks, so that what mount(2) binds,
// and where, is exactly the path the plan checked.
//
// The plan checks canonical (symlink-free) paths before the jail exists; the jail mounts them
// later. A path handed to mount(2) is resolved again then, following every symlink
// (path_resolution(7)), so anything that can write a directory on the way (a second jail in
// the same work directory, an earlier run's --rw or --home DIR below a later mount point) could
// swap a checked directory for a link in between. So each path is opened once, component by
// component with O_PATH|O_NOFOLLOW (open(2)), refusing any component that is a symlink;
// the checks are made on that descriptor (fstat) and mount(2) is given /proc/self/fd/N, which
// the kernel resolves to exactly the opened file (proc(5): the fd links are "magic links"),
// as runc does. A walk rather than openat2(2)'s RESOLVE_NO_SYMLINKS: the same on every kernel
// the launcher runs on (openat2 is Linux 5.6), and it names the component that is a link.

#include "core/unique_fd.hpp"

#include <string>

namespace airlock::launcher {

using path_fd = core::unique_fd;

struct walk_options {
  // Make what is missing: directories (0755) on the way, and at the end a directory or, when
  // !is_dir, an empty file (mode 0644) — a mount point. Made with O_EXCL / mkdirat, so that
  // nothing is ever created through a link.
  bool create = false;
  bool is_dir = true;
  // The last component may be a symlink: the descriptor is then the link's own (fstat shows
  // S_ISLNK), never what it points to.
  bool last_may_be_link = false;
};

// A path opened by open_no_symlinks: the descriptors of it and of the directory holding it.
struct opened_path {
  path_fd dir;       // O_PATH, the directory that holds it
  std::string name;  // its last component
  path_fd fd;        // O_PATH|O_NOFOLLOW
  explicit operator bool() const { return static_cast<bool>(fd); }
};

// Opens root + path (path absolute, as the plan names it; root a directory of the launcher's
// own, such as the staging root, opened as it is) walking path's components one by one without
// following any symlink. "." and ".." are refused too: the plan's paths are canonical.
// On failure the result is empty, errno tells why (ELOOP for a link) and the failure is
// recorded (step.hpp); a link is named in the message by path, not by root + path.
opened_path open_no_symlinks(const std::string& root, const std::string& path,
                             const walk_options& opts = {});

// /proc/self/fd/N under the proc mount at proc_root: the path that mount(2) resolves to
// exactly the descriptor's file.
std::string fd_path(const std::string& proc_root, int fd);

}  // namespace airlock::launcher
