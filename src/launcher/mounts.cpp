#include "launcher/mounts.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/mount_steps.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace airlock::launcher {
namespace {

using core::str_cat;
using namespace mount_detail;

constexpr unsigned long tmpfs_flags = MS_NOSUID | MS_NODEV;

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// mkdir -p, for the staged files' directories in the staging tmpfs (the launcher's own).
bool make_dirs(const std::string& path) {
  std::string partial;
  std::size_t pos = 1;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    partial = path.substr(0, next);
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      return step_failed(str_cat("mkdir(", partial, ')'));
    pos = next + 1;
  }
  return true;
}

bool write_staged_file(const staged_file& f, const mount_context& ctx) {
  const std::string path = str_cat('/', f.path);
  const auto slash = path.rfind('/');
  if (slash != 0 && !make_dirs(path.substr(0, slash))) return false;
  if (!f.bind_from.empty()) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return step_failed(str_cat("open(", path, ", O_CREAT)"));
    ::close(fd);
    // The host's file as checked, not whatever its path leads to by now (path_walk.hpp).
    const auto src = open_no_symlinks(ctx.host_root, f.bind_from);
    if (!src) return false;
    return do_mount(fd_path(proc_root(ctx), src.fd.get()).c_str(), path, nullptr, MS_BIND, nullptr,
                    f.bind_from);
  }
  if (!f.link_to.empty()) {
    const std::string to = str_cat('/', f.link_to);
    if (::link(to.c_str(), path.c_str()) != 0) return step_failed(str_cat("link(", path, ')'));
    return true;
  }
  return write_whole_file(path, f.content, O_EXCL);
}

// Makes a fresh tmpfs the root of this mount namespace, with the host's root at
// ctx.host_root below it (bubblewrap's first pivot_root). Any existing directory serves as
// the tmpfs's first mount point: pivot_root moves the tmpfs away from it again, so the host's
// directory is seen as it is below ctx.host_root.
bool enter_staging_tmpfs(const mount_context& ctx) {
  bool mounted = false;
  std::string base;
  for (const char* candidate : {"/tmp", "/dev", "/run", "/mnt"}) {
    // No device nodes, no set-uid files, nothing to execute: it holds only files to read.
    if (::mount("tmpfs", candidate, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") == 0) {
      mounted = true;
      base = candidate;
      break;
    }
  }
  if (!mounted) return step_failed("mount(tmpfs, staging)");
  const std::string old_dir = str_cat(base, ctx.host_root);
  if (::mkdir(old_dir.c_str(), 0755) != 0) return step_failed(str_cat("mkdir(", old_dir, ')'));
  if (::syscall(SYS_pivot_root, base.c_str(), old_dir.c_str()) != 0)
    return step_failed(str_cat("pivot_root(", base, ", ", old_dir, ')'));
  if (::chdir("/") != 0) return step_failed("chdir(/)");
  return true;
}

bool step_root_ro(const mount_context& ctx) {
  if (!enter_staging_tmpfs(ctx)) return false;
  for (const auto& f : ctx.files) {
    if (!write_staged_file(f, ctx)) return false;
  }
  // The file bound over hidden files: mode 000, so open() fails rather than reading empty.
  const int fd = ::open(ctx.masked_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return step_failed(str_cat("open(", ctx.masked_file, ", O_CREAT)"));
  ::close(fd);
  if (::mkdir(ctx.staging_root.c_str(), 0755) != 0)
    return step_failed(str_cat("mkdir(", ctx.staging_root, ')'));
  if (!do_mount(ctx.host_root.c_str(), ctx.staging_root, nullptr, MS_BIND | MS_REC, nullptr))
    return false;
  return make_read_only(ctx.staging_root, true);
}

bool step_tmpfs(const mount_context& ctx, const std::string& target, const std::string& data) {
  const auto at = mount_point(ctx, target, true);
  return at && mount_on(ctx, at, target, "tmpfs", "tmpfs", tmpfs_flags, data.c_str());
}

bool bind_device(const std::string& host_root, const std::string& dev_root, const char* name) {
  const std::string target = str_cat(dev_root, '/', name);
  // A fresh tmpfs: the node cannot be there yet.
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return step_failed(str_cat("open(", target, ", O_CREAT)"));
  ::close(fd);
  // mknod is not allowed in a user namespace; binding the host's node is (bubblewrap --dev).
  return do_mount(str_cat(host_root, "/dev/", name).c_str(), target, nullptr, MS_BIND, nullptr);
}

// Below the tmpfs mounted here, every path is the launcher's own: made by path.
bool step_dev(const mount_step& s, const std::string& target, const mount_context& ctx) {
  const auto at = mount_point(ctx, s.target, true);
  // A dozen nodes, read-only once populated; bounded anyway, like every tmpfs of the jail.
  if (!at || !mount_on(ctx, at, s.target, "tmpfs", "tmpfs", MS_NOSUID | MS_NOEXEC,
                       "mode=0755,size=64k,nr_inodes=64"))
    return false;
  for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"}) {
    if (!bind_device(ctx.host_root, target, dev)) return false;
  }
  struct link {
    const char* name;
    const char* to;
  };
  for (const link& l : {link{"fd", "/proc/self/fd"}, link{"stdin", "/proc/self/fd/0"},
                        link{"stdout", "/proc/self/fd/1"}, link{"stderr", "/proc/self/fd/2"},
                        link{"core", "/proc/kcore"}, link{"ptmx", "pts/ptmx"}}) {
    const std::string at = str_cat(target, '/', l.name);
    if (::symlink(l.to, at.c_str()) != 0) return step_failed(str_cat("symlink(", at, ')'));
  }
  // A private devpts, so programs that need a pseudo-terminal (script, expect, ssh -t) work
  // without seeing the host's terminals. Optional: a kernel may refuse it in a user namespace.
  const std::string pts = target + "/pts";
  if (::mkdir(pts.c_str(), 0755) != 0) return step_failed(str_cat("mkdir(", pts, ')'));
  if (::mount("devpts", pts.c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") != 0) {
    AIRLOCK_LOG(debug, "launcher",
                "mount(devpts) failed; no pseudo-terminals inside: ", std::strerror(errno));
  }
  // POSIX shared memory (shm_open, Python's multiprocessing) lives in /dev/shm.
  return step_tmpfs(ctx, s.target + "/shm", s.data.empty() ? "mode=1777" : s.data);
}

bool step_proc(const std::string& target) {
  // Only a process inside the new PID namespace may mount the proc that shows it. Mounting
  // over the read-only copy of the host's /proc (rather than unmounting it, which the kernel
  // refuses for locked mounts) is enough: nothing can unmount ours to reveal it.
  return do_mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
}

bool step_sysfs(const std::string& target) {
  // A sysfs mounted from the new network namespace shows only its loopback. When the kernel
  // refuses (say, a host /sys partly covered by other mounts), the read-only copy stays.
  if (::mount("sysfs", target.c_str(), "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
    AIRLOCK_LOG(debug, "launcher",
                "mount(sysfs) failed, keeping the read-only host /sys: ", std::strerror(errno));
  }
  return true;
}

// The home as a private overlay (overlayfs(5)): the caller's home read-only below, a fresh
// sized tmpfs above, so that caches and dotfiles can be written and vanish with the jail.
// Unprivileged overlay mounts need Linux 5.11; "userxattr" (5.11) keeps the overlay's own
// bookkeeping in user.* attributes, which a user namespace may set (on tmpfs since 6.6),
// and is retried without for older kernels. Failing both, the home stays read-only and the
// launcher says so.
bool step_home_layer(const mount_step& s, const mount_context& ctx, bool& layered) {
  layered = false;
  const std::string lower = str_cat(ctx.host_root, s.source);
  const std::string layer = "/home-layer";
  struct stat st;
  if (::stat(lower.c_str(), &st) != 0) return true;
  if (::mkdir(layer.c_str(), 0755) != 0) return step_failed(str_cat("mkdir(", layer, ')'));
  if (!do_mount("tmpfs", layer, "tmpfs", tmpfs_flags, s.data.c_str())) return false;
  const std::string upper = layer + "/upper", work = layer + "/work";
  if (::mkdir(upper.c_str(), st.st_mode & 07777) != 0 || ::mkdir(work.c_str(), 0700) != 0)
    return step_failed(str_cat("mkdir(", upper, ')'));
  (void)::chmod(upper.c_str(), st.st_mode & 07777);  // the umask took some bits
  const std::string options = str_cat("lowerdir=", lower, ",upperdir=", upper, ",workdir=", work);
  // A home below a directory the jail has its own of (/tmp) needs its mount point made.
  const auto at = mount_point(ctx, s.target, true);
  if (!at) return false;
  const std::string on = fd_path(proc_root(ctx), at.fd.get());
  for (const char* extra : {",userxattr", ""}) {
    if (::mount("overlay", on.c_str(), "overlay", tmpfs_flags, str_cat(options, extra).c_str()) ==
        0) {
      layered = true;
      return true;
    }
  }
  AIRLOCK_LOG(debug, "launcher", "mount(overlay, ", s.target, ") failed: ", std::strerror(errno));
  return true;
}

bool step_protect_ro(const std::string& target, bool optional) {
  if (!exists(target)) return optional ? true : step_failed(str_cat("lstat(", target, ')'));
  if (!do_mount(target.c_str(), target, nullptr, MS_BIND | MS_REC, nullptr)) return false;
  return make_read_only(target, true);
}

bool step_pivot(const mount_context& ctx) {
  // pivot_root(".", ".") stacks the old root (the staging tmpfs) on top of the new one;
  // unmounting "." then removes it without needing a directory for it (pivot_root(2), NOTES).
  // The lazy unmount takes the whole tree below the tmpfs along, the host's root at
  // ctx.host_root included: one unmount (and one RCU grace period in the kernel), not two.
  const std::string& root = ctx.staging_root;
  if (::chdir(root.c_str()) != 0) return step_failed(str_cat("chdir(", root, ')'));
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return step_failed("pivot_root(., .)");
  if (::umount2(".", MNT_DETACH) != 0) return step_failed("umount2(old root, MNT_DETACH)");
  if (::chdir("/") != 0) return step_failed("chdir(/)");
  return true;
}

}  // namespace

bool apply_mounts(const std::vector<mount_step>& steps, const mount_context& ctx,
                  mount_outcome* outcome) {
  for (const auto& s : steps) {
    const std::string target = join(ctx.staging_root, s.target);
    bool ok = true;
    switch (s.kind) {
      case mount_kind::private_propagation:
        // Nothing mounted in here may propagate back to the host (and pivot_root demands it).
        ok = do_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
        break;
      case mount_kind::root_ro:
        ok = step_root_ro(ctx);
        break;
      case mount_kind::tmpfs:
        ok = step_tmpfs(ctx, s.target, s.data);
        break;
      case mount_kind::dev:
        ok = step_dev(s, target, ctx);
        break;
      case mount_kind::proc:
        ok = step_proc(target);
        break;
      case mount_kind::sysfs:
        ok = step_sysfs(target);
        break;
      case mount_kind::trust:
        ok = step_bind(ctx, "/", ctx.trust_dir, s);
        break;
      case mount_kind::bind:
        ok = step_bind(ctx, ctx.host_root, s.source, s);
        break;
      case mount_kind::resolv_conf:
        ok = step_resolv_conf(s, ctx);
        break;
      case mount_kind::hide:
        ok = step_hide(s, ctx, outcome);
        break;
      case mount_kind::protect_ro:
        ok = step_protect_ro(target, s.optional);
        break;
      case mount_kind::remount_ro:
        ok = make_read_only(target, false);
        break;
      case mount_kind::pivot_root:
        ok = step_pivot(ctx);
        break;
      case mount_kind::trust_file:
        ok = step_trust_file(s, ctx);
        break;
      case mount_kind::home_layer: {
        bool layered = false;
        ok = step_home_layer(s, ctx, layered);
        if (outcome) outcome->home_layered = layered;
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace airlock::launcher
