#include "launcher/namespaces.hpp"

#include "core/str_cat.hpp"
#include "launcher/plan.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::launcher {
namespace {

using core::str_cat;

bool write_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return step_failed(str_cat("open(", path, ")"));
  const ssize_t n = ::write(fd, content.data(), content.size());
  const int err = errno;
  ::close(fd);
  errno = err;
  if (n != static_cast<ssize_t>(content.size()))
    return step_failed(
        str_cat("write(", path, ", \"", content.substr(0, content.size() - 1), "\")"));
  return true;
}

struct ns_name {
  int flag;
  const char* name;
  const char* config;
};
constexpr ns_name namespaces[] = {
    {CLONE_NEWUSER, "user", "CONFIG_USER_NS"}, {CLONE_NEWNS, "mount", "CONFIG_NAMESPACES"},
    {CLONE_NEWPID, "PID", "CONFIG_PID_NS"},    {CLONE_NEWNET, "network", "CONFIG_NET_NS"},
    {CLONE_NEWIPC, "IPC", "CONFIG_IPC_NS"},    {CLONE_NEWUTS, "UTS", "CONFIG_UTS_NS"},
};

// errno of unshare(flags) in a throwaway child; 0 when it works.
int probe(int flags) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return errno;
  const pid_t pid = ::fork();
  if (pid == 0) {
    int err = ::unshare(flags) == 0 ? 0 : errno;
    (void)!::write(pipefd[1], &err, sizeof err);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  int err = EINVAL;
  if (pid > 0) {
    if (::read(pipefd[0], &err, sizeof err) != sizeof err) err = EINVAL;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  } else {
    err = errno;
  }
  ::close(pipefd[0]);
  return err;
}

}  // namespace

pid_t clone_into_namespaces(int flags) noexcept {
  // The raw system call, as fork(2) would make it: child on a copy of our stack. glibc's
  // clone() wrapper insists on a separate stack, which buys nothing here. Arguments after
  // flags are stack, parent_tid, child_tid, tls (x86_64 order; all zero, so any order works).
  return static_cast<pid_t>(
      ::syscall(SYS_clone, static_cast<unsigned long>(flags) | SIGCHLD, 0, nullptr, nullptr, 0));
}

bool write_id_maps(pid_t child, const plan& p) {
  const std::string base = str_cat("/proc/", child, '/');
  // Without this an unprivileged gid_map is refused (user_namespaces(7), CVE-2014-8989).
  if (p.deny_setgroups && !write_file(base + "setgroups", "deny\n")) return false;
  if (!write_file(base + "uid_map", str_cat(p.inside_uid, ' ', p.outside_uid, " 1\n")))
    return false;
  return write_file(base + "gid_map", str_cat(p.inside_gid, ' ', p.outside_gid, " 1\n"));
}

bool become_inside_identity(const plan& p) {
  // Root may drop the supplementary groups it brought; an unprivileged caller cannot (setgroups
  // is denied) and keeps its own, which the kernel still checks against host files.
  if (!p.deny_setgroups && ::setgroups(0, nullptr) != 0) return step_failed("setgroups(0)");
  if (::setresgid(p.inside_gid, p.inside_gid, p.inside_gid) != 0)
    return step_failed(str_cat("setresgid(", p.inside_gid, ')'));
  if (::setresuid(p.inside_uid, p.inside_uid, p.inside_uid) != 0)
    return step_failed(str_cat("setresuid(", p.inside_uid, ')'));
  return true;
}

bool set_hostname(const std::string& name) {
  if (::sethostname(name.data(), name.size()) != 0)
    return step_failed(str_cat("sethostname(", name, ')'));
  return true;
}

bool enter_cgroup_namespace() {
  if (::unshare(CLONE_NEWCGROUP) == 0) return true;
  if (errno == EINVAL) return true;  // kernel without cgroup namespaces: nothing to hide then
  return step_failed("unshare(CLONE_NEWCGROUP)");
}

std::string explain_namespace_failure(int flags, int err) {
  std::string missing;
  for (const auto& ns : namespaces) {
    if (!(flags & ns.flag)) continue;
    // Every namespace but the user one needs the user one when we are unprivileged.
    const int probe_flags = ns.flag == CLONE_NEWUSER ? ns.flag : (ns.flag | CLONE_NEWUSER);
    const int e = probe(probe_flags);
    if (e == 0) continue;
    if (ns.flag == CLONE_NEWUSER) {
      std::string why = str_cat("user namespaces are not available (", std::strerror(e), ")");
      if (e == EPERM || e == EACCES) {
        why +=
            "; check sysctl kernel.unprivileged_userns_clone=1 (Debian),"
            " kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu) or seccomp rules of"
            " an enclosing container";
      } else if (e == ENOSPC || e == EUSERS) {
        why += "; sysctl user.max_user_namespaces is 0 or the limit is reached";
      } else if (e == EINVAL) {
        why += str_cat("; the kernel lacks ", ns.config);
      }
      return why;
    }
    missing = str_cat(ns.name, " namespaces are not available (", std::strerror(e), ")",
                      e == EINVAL ? str_cat("; the kernel lacks ", ns.config) : std::string());
    return missing;
  }
  return str_cat("clone(namespaces): ", std::strerror(err));
}

}  // namespace airlock::launcher
