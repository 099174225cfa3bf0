// The jail's side of `airlock run` (run_jail.hpp): its init (PID 1 in the jail) and the
// command (PID 2). Runs in the child of clone(2), inside the new namespaces.
#include "launcher/run_jail.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/capabilities.hpp"
#include "launcher/capture_net.hpp"
#include "launcher/channel.hpp"
#include "launcher/exit_codes.hpp"
#include "launcher/limits.hpp"
#include "launcher/namespaces.hpp"
#include "launcher/network.hpp"
#include "launcher/seccomp.hpp"
#include "launcher/step.hpp"
#include "launcher/terminal.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace airlock::launcher::run_detail {

using core::str_cat;

void say(std::string_view message) {
  const std::string line = str_cat("airlock run: ", message, '\n');
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

sigset_t jail_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : forwarded_signals)
    sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  return set;
}

int status_to_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return exit_launcher_error;
}

namespace {

// ---- the command (PID 2 in the jail) ------------------------------------------------------

[[noreturn]] void exec_command(const plan& p, std::uint32_t rlimit_mask, int tty,
                               const self_test_setup& probes) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // The jail's pty (the session's controlling terminal) in place of the caller's terminal.
  if (!take_terminal(tty)) {
    say(str_cat("cannot confine the command (terminal: ", last_step_error(), ")"));
    ::_exit(kConfinementFailed);
  }
  if (tty > 2) ::close(tty);

  // Everything is prepared before the rlimits apply: with RLIMIT_AS set, even a small
  // allocation may fail (and a sanitizer's shadow memory certainly would).
  std::vector<char*> argv, envp;
  for (const auto& a : p.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : p.env.entries) {
    envp.push_back(const_cast<char*>(e.c_str()));
    if (e.starts_with("PATH=")) path = e.substr(5);
  }
  envp.push_back(nullptr);
  // execvpe(3) would search the launcher's PATH, not the one the command gets.
  const std::string& cmd = p.argv[0];
  std::vector<std::string> candidates;
  if (cmd.find('/') != std::string::npos) {
    candidates.push_back(cmd);
  } else {
    std::string_view rest = path;
    while (true) {
      auto colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      candidates.push_back(str_cat(dir.empty() ? "." : dir, '/', cmd));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  const std::string not_found = str_cat(cmd, ": command not found");

  // The rlimit fallbacks bind the command's tree, not the jail's init.
  if (!apply_rlimits(p.limits, rlimit_mask)) {
    say(str_cat("cannot confine the command (limits: ", last_step_error(), ")"));
    ::_exit(kConfinementFailed);
  }
  if (p.self_test) run_probes(p, probes);
  int err = ENOENT;
  bool denied = false;
  for (const auto& candidate : candidates) {
    ::execve(candidate.c_str(), argv.data(), envp.data());
    err = errno;
    if (candidates.size() == 1) break;
    // EACCES from an unsearchable directory on PATH is "not there" (as in sh); from a file
    // that exists, "cannot execute".
    if (err == EACCES) {
      denied = denied || ::access(candidate.c_str(), F_OK) == 0;
    } else if (err != ENOENT && err != ENOTDIR) {
      break;
    }
    err = denied ? EACCES : ENOENT;
  }
  if (err == ENOENT || err == ENOTDIR) {
    say(not_found);
    ::_exit(exit_not_found);
  }
  say(str_cat(cmd, ": cannot execute: ", std::strerror(err)));
  ::_exit(exit_cannot_exec);
}

// ---- the jail's init (PID 1 in the jail) -------------------------------------------------

[[noreturn]] void init_loop(pid_t command) {
  const sigset_t set = jail_signal_set();
  while (true) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&set, &info);
    if (sig < 0) continue;
    if (sig == SIGCHLD) {
      // As init, we also inherit every orphan in the namespace: reap them all.
      int status = 0;
      pid_t w;
      while ((w = ::waitpid(-1, &status, WNOHANG)) > 0) {
        // Returning takes the namespace down: the kernel kills whatever is left.
        if (w == command) ::_exit(status_to_code(status));
      }
      continue;
    }
    // Only what the launcher sends: its PID is not in this namespace, so the kernel reports
    // si_pid 0 (a signal from inside, say kill(0, sig) over the jail's process group, has
    // the sender's PID and already reached its targets).
    if (info.si_pid != 0) continue;
    // From the jail's pty (^C, a new window size): the kernel signalled the whole foreground
    // process group, the command included, already.
    if (info.si_code == SI_KERNEL) continue;
    ::kill(command, sig);
  }
}

}  // namespace

[[noreturn]] void jail_main(const plan& p, mount_context& ctx, int sock,
                            const self_test_setup& probes) {
  auto die = [&](std::string_view stage) {
    send_message(sock, message_type::failed, 0, str_cat(stage, ": ", last_step_error()));
    ::_exit(kConfinementFailed);
  };
  // If the launcher dies, so does the jail (and with its init, the whole PID namespace).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    step_failed("prctl(PR_SET_PDEATHSIG)");
    die("setup");
  }
  // Nothing the launcher had open (but stdio) may reach the command.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 1024; ++fd) {
      const int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
  }
  auto go = receive_message(sock);  // end-of-file: the launcher gave up on us
  if (!go || go->type != message_type::go) ::_exit(kConfinementFailed);
  // This process is a copy of the launcher: its memory and /proc/1/environ hold the host's
  // unscrubbed environment. Non-dumpable, its /proc files need CAP_SYS_PTRACE, which the
  // command never has (proc(5), PR_SET_DUMPABLE). Only now: before the maps were written,
  // it would also have locked the launcher out of /proc/PID/uid_map.
  if (::prctl(PR_SET_DUMPABLE, 0) != 0) {
    step_failed("prctl(PR_SET_DUMPABLE, 0)");
    die("setup");
  }

  if (!become_inside_identity(p)) die("identity");
  if (!enter_cgroup_namespace()) die("cgroup namespace");
  if (!set_hostname(p.hostname)) die("hostname");
  if (!bring_up_loopback()) die("network");
  const int listener = listen_on_loopback(p.relay.port);
  if (listener < 0) die("relay listener");
  if (!send_message(sock, message_type::relay_fd, 0, {}, listener)) die("relay listener");
  ::close(listener);

  // Transparent capture, while this process still holds CAP_NET_ADMIN in the jail's network
  // namespace. Optional unless --capture asked for it: without it the jail is exactly as
  // confined, only less convenient, and the user is told why.
  if (p.capture.enabled) {
    capture_sockets cs;
    if (set_up_capture(cs)) {
      const std::pair<int, socket_role> sent[] = {{cs.v4, socket_role::capture_v4},
                                                  {cs.v6, socket_role::capture_v6},
                                                  {cs.dns, socket_role::dns}};
      for (const auto& [fd, role] : sent) {
        if (fd >= 0 &&
            !send_message(sock, message_type::relay_fd, static_cast<std::uint32_t>(role), {}, fd))
          die("capture");
      }
      cs.close_all();
    } else {
      if (p.capture.required) die("capture");
      send_message(sock, message_type::notice, 0,
                   str_cat("warning: no transparent capture (", last_step_error(),
                           "); only programs that use the proxy variables get out"));
      ctx.resolv_file.clear();
    }
  } else {
    ctx.resolv_file.clear();
  }

  mount_outcome mounted;
  if (!apply_mounts(p.mounts, ctx, &mounted)) die("mounts");
  if (p.home.mode == home_mode::layer && !mounted.home_layered) {
    send_message(sock, message_type::notice, 0,
                 str_cat("warning: no writable layer over ", p.home.path,
                         " (the kernel refused an overlay mount); the home is read-only",
                         mounted.uncovered.empty()
                             ? std::string()
                             : str_cat(", and credential paths created there while the jail "
                                       "runs are not hidden (",
                                       mounted.uncovered.size(), ", such as ",
                                       mounted.uncovered.front(), ')')));
  }
  // The command's pty, from the jail's own devpts; without one (a kernel that refused the
  // devpts mount) the command keeps the caller's terminal, still in a session of its own.
  int tty = -1;
  if (p.terminal) {
    int master = -1;
    if (open_jail_terminal(master, tty)) {
      if (!send_message(sock, message_type::relay_fd,
                        static_cast<std::uint32_t>(socket_role::terminal), {}, master))
        die("terminal");
      ::close(master);
    } else {
      send_message(sock, message_type::notice, 0,
                   str_cat("warning: no pseudo-terminal in the jail (", last_step_error(),
                           "); the command uses yours, in a session of its own"));
    }
  }
  if (::chdir(p.workdir.c_str()) != 0) {
    step_failed(str_cat("chdir(", p.workdir, ')'));
    die("work directory");
  }
  // Privileges last, seccomp very last: each step still needs what the next one drops.
  if (!drop_all_capabilities()) die("capabilities");
  if (!set_no_new_privs()) die("no_new_privs");
  {
    // The launcher compiled the filter meanwhile; without a program from it, compile here.
    auto filter = receive_message(sock);
    if (!filter || filter->type != message_type::filter) ::_exit(kConfinementFailed);
    const bool installed =
        filter->fd >= 0 ? install_seccomp_program(filter->fd) : install_seccomp_filter();
    if (filter->fd >= 0) ::close(filter->fd);
    if (!installed) die("seccomp");
  }

  // Out of the caller's process group, and out of its session where it has a terminal: the
  // caller's terminal can neither signal the jail nor be its controlling terminal (TIOCSTI
  // needs that or CAP_SYS_ADMIN), and kill(0, sig) inside reaches only the jail. Only now,
  // after the last exchange with the launcher: a new session is a new scheduling group
  // (autogroup), and every hand-off across groups can wait for a time slice on a busy host.
  if (!leave_caller_session(p.new_session)) die("setup");
  if (tty >= 0 && !make_controlling_terminal(tty)) die("terminal");
  const pid_t command = ::fork();
  if (command < 0) {
    step_failed("fork(command)");
    die("start");
  }
  if (command == 0) {
    ::close(sock);
    exec_command(p, go->flags, tty, probes);
  }
  if (tty >= 0) ::close(tty);
  send_message(sock, message_type::ready);
  ::close(sock);
  init_loop(command);
}

}  // namespace airlock::launcher::run_detail
