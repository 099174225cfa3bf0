// The attributes of mounts already made (mounts.hpp): make_read_only and make_nosuid, each by
// mount_setattr(2) where the kernel has it (Linux 5.12), else by bind remounts that keep the
// flags the kernel locked.
#include "core/str_cat.hpp"
#include "launcher/mounts.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace airlock::launcher {
namespace {

using core::str_cat;

// Mount flags that statvfs reports and that a bind remount must repeat: when a mount was
// copied into our less privileged user namespace the kernel locks them (MNT_LOCK_*), and a
// remount that would clear one fails with EPERM (bubblewrap learned this the hard way).
unsigned long locked_flags(const std::string& path) {
  struct statvfs sv;
  if (::statvfs(path.c_str(), &sv) != 0) return 0;
  unsigned long flags = 0;
  if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// `via`: what the calls are given, when not path itself (mounts.hpp).
bool remount_read_only_one(const std::string& path, const std::string& via = {}) {
  const std::string& at = via.empty() ? path : via;
  if (::mount(nullptr, at.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(at),
              nullptr) != 0) {
    return step_failed(str_cat("mount(", path, ", MS_REMOUNT|MS_BIND|MS_RDONLY)"));
  }
  return true;
}

// Unescapes the octal sequences (\040 for space ...) of /proc/self/mountinfo.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const auto digits = s.substr(i + 1, 3);
      if (digits.size() == 3 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>(std::stoi(digits, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// For kernels before 5.12 (no mount_setattr): remount every mount at or below path.
bool remount_tree_read_only(const std::string& path) {
  // While the jail is assembled, the only proc is the host's, below the staging tmpfs; its
  // mountinfo shows mount points relative to our root (the tmpfs), as path is.
  std::ifstream in("/proc/self/mountinfo");
  if (!in) in.open(str_cat(mount_context{}.host_root, "/proc/self/mountinfo"));
  if (!in) return step_failed("open(/proc/self/mountinfo)");
  std::vector<std::string> points;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    point = unescape(point);
    if (point == path ||
        (point.starts_with(path) && point.size() > path.size() && point[path.size()] == '/'))
      points.push_back(point);
  }
  // Parents first; a later mount over the same point is the visible one and gets done last.
  for (const auto& p : points) {
    if (!remount_read_only_one(p)) {
      if (errno == EACCES || errno == ENOENT) continue;  // hidden below another mount
      return false;
    }
  }
  return true;
}

}  // namespace

// nosuid and nodev on a writable bind and every mount below it (defence in depth: seccomp
// already refuses setuid modes, and no_new_privs makes the bits inert for the command).
bool make_nosuid(const std::string& path, const std::string& via) {
  const std::string& at = via.empty() ? path : via;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, at.c_str(), AT_RECURSIVE, &attr, sizeof attr) == 0)
    return true;
  if (errno != ENOSYS) return step_failed(str_cat("mount_setattr(", path, ", MOUNT_ATTR_NOSUID)"));
  // Before Linux 5.12: the top mount only.
  if (::mount(nullptr, at.c_str(), nullptr,
              MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | locked_flags(at), nullptr) != 0)
    return step_failed(str_cat("mount(", path, ", MS_REMOUNT|MS_BIND|MS_NOSUID)"));
  return true;
}

bool make_read_only(const std::string& path, bool recursive, const std::string& via) {
  // mount_setattr(2) (Linux 5.12) changes only the read-only bit, recursively and atomically.
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  const unsigned int flags = recursive ? AT_RECURSIVE : 0;
  const std::string& at = via.empty() ? path : via;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, at.c_str(), flags, &attr, sizeof attr) == 0)
    return true;
  if (errno != ENOSYS) return step_failed(str_cat("mount_setattr(", path, ", MOUNT_ATTR_RDONLY)"));
  // The mounts below are found by path in mountinfo: before 5.12 a writer racing the launcher
  // could still move those (not the top one, which `via` holds).
  if (!recursive) return remount_read_only_one(path, via);
  return remount_read_only_one(path, via) && remount_tree_read_only(path);
}

}  // namespace airlock::launcher
