// Runs a check as an unprivileged user, also when the tests run as root (as CI does): root
// reads every file whatever its mode, so a "permission denied" path would otherwise never run
// there. As root the check runs in a forked child that has dropped to nobody (65534); its
// result comes back as the exit status. setresuid(2), setgroups(2).
#pragma once

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace airlock::test {

// What `check` returned ("" for success, else what went wrong), run unprivileged.
inline std::string as_unprivileged(const std::function<std::string()>& check) {
  if (::geteuid() != 0) return check();
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    const gid_t nobody = 65534;
    std::string out;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(nobody, nobody, nobody) != 0 ||
        ::setresuid(nobody, nobody, nobody) != 0) {
      out = "cannot drop to nobody";
    } else {
      out = check();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(out.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the unprivileged check died";
  if (WEXITSTATUS(status) != 0 && out.empty()) return "the unprivileged check failed";
  return out;
}

}  // namespace airlock::test
