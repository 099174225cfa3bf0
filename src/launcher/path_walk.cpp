#include "launcher/path_walk.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

namespace airlock::launcher {
namespace {

using core::str_cat;

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    while (path.starts_with('/'))
      path.remove_prefix(1);
    const auto part = path.substr(0, path.find('/'));
    if (part.empty()) break;
    parts.push_back(part);
    path.remove_prefix(part.size());
  }
  return parts;
}

// Records `message` as the step's failure and leaves errno at err.
opened_path fail(std::string_view message, int err) {
  step_failed_msg(message);
  errno = err;
  return {};
}

// Makes the missing `name` in dir: a directory, or an empty file. Neither follows a link:
// mkdirat(2) never does, and O_CREAT|O_EXCL fails on any existing name, a dangling link
// included (open(2)). EEXIST (made meanwhile) is left to the open that follows.
bool make_missing(int dir, const std::string& name, bool as_dir, const std::string& shown) {
  if (as_dir) {
    if (::mkdirat(dir, name.c_str(), 0755) == 0 || errno == EEXIST) return true;
    return step_failed(str_cat("mkdir(", shown, ')'));
  }
  const int fd =
      ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  if (errno == EEXIST) return true;
  return step_failed(str_cat("open(", shown, ", O_CREAT)"));
}

}  // namespace

opened_path open_no_symlinks(const std::string& root, const std::string& path,
                             const walk_options& opts) {
  path_fd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    step_failed(str_cat("open(", root, ')'));
    return {};
  }
  const auto parts = components(path);
  if (parts.empty()) return fail(str_cat("open(", path, "): not a path below ", root), EINVAL);
  std::string spelled;  // the components so far, as the plan names them
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const std::string name(parts[i]);
    spelled = str_cat(spelled, '/', name);
    if (name == "." || name == "..")
      return fail(str_cat(path, ": ", spelled, " is not a canonical path"), EINVAL);
    int fd = ::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && opts.create) {
      if (!make_missing(dir.get(), name, !last || opts.is_dir, spelled)) return {};
      fd = ::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      step_failed(str_cat("open(", spelled, ')'));
      return {};
    }
    path_fd next(fd);
    struct stat st;
    if (::fstat(next.get(), &st) != 0) {
      step_failed(str_cat("fstat(", spelled, ')'));
      return {};
    }
    if (S_ISLNK(st.st_mode) && !(last && opts.last_may_be_link)) {
      return fail(str_cat(spelled, " is a symlink (", path,
                          " was checked without one): refusing to follow it; a process that "
                          "can write there, such as a jailed run, may have planted it"),
                  ELOOP);
    }
    if (last) return {std::move(dir), name, std::move(next)};
    if (!S_ISDIR(st.st_mode)) return fail(str_cat(spelled, " is not a directory"), ENOTDIR);
    dir = std::move(next);
  }
  return {};  // not reached: the loop returns at the last component
}

std::string fd_path(const std::string& proc_root, int fd) {
  return str_cat(proc_root, "/self/fd/", fd);
}

}  // namespace airlock::launcher
