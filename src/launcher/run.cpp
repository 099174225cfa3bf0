#include "launcher/run.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/address.hpp"
#include "launcher/capabilities.hpp"
#include "launcher/capture_net.hpp"
#include "launcher/channel.hpp"
#include "launcher/exit_codes.hpp"
#include "launcher/host.hpp"
#include "launcher/limits.hpp"
#include "launcher/mounts.hpp"
#include "launcher/namespaces.hpp"
#include "launcher/network.hpp"
#include "launcher/plan.hpp"
#include "launcher/relay.hpp"
#include "launcher/seccomp.hpp"
#include "launcher/self_test.hpp"
#include "launcher/step.hpp"
#include "launcher/terminal.hpp"
#include "launcher/trust.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace airlock::launcher {
namespace {

using core::str_cat;

// Signals passed on to the command. The jail is in a session of its own (terminal.hpp), so
// the caller's terminal signals only the launcher, which passes them on; SIGWINCH instead
// resizes the command's pty when it has one.
constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

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
                         " (the kernel refused an overlay mount); the home is read-only"));
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

// ---- the launcher ----------------------------------------------------------------------

// Kills and reaps the jail if the launcher leaves before it is done (error paths).
class jail_guard {
 public:
  explicit jail_guard(pid_t pid) : pid_(pid) {}
  ~jail_guard() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  void reaped() { pid_ = -1; }

 private:
  pid_t pid_;
};

// What the jail's staging tmpfs gets (mounts.hpp): the trust files and, with capture, the
// resolver's resolv.conf. Only memory here; the jail writes them after it has its own tmpfs.
bool prepare_staging(plan& p, mount_context& ctx) {
  if (p.capture.enabled) {
    // The jail's resolv.conf: its own resolver only. No search list: a short name is asked
    // as it is, and answered like any other.
    ctx.resolv_file = "/resolv.conf";
    ctx.files.push_back({ctx.resolv_file.substr(1),
                         "# airlock run: the jail's resolver; no query leaves the jail\n"
                         "nameserver 127.0.0.1\n",
                         {},
                         {}});
  }
  bool java_made = false;
  if (!build_trust_files(p.trust, ctx.trust_dir.substr(1), ctx.files, java_made)) return false;
  if (p.trust.java && !java_made) {
    say(str_cat("warning: no Java trust store (", last_step_error(),
                "); Java trusts only its own cacerts"));
    std::erase_if(p.env.entries,
                  [](const std::string& e) { return e.starts_with("JAVA_TOOL_OPTIONS="); });
  }
  return true;
}

std::string format_ms(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return str_cat(ms.count() / 1000, 's');
  return str_cat(ms.count(), "ms");
}

}  // namespace

int run(const options& o) {
  if (o.verbose) core::set_log_level(core::log_level::debug);

  host_facts host;
  if (!real_host_facts(host)) {
    say(last_step_error());
    return exit_launcher_error;
  }
  plan_result built = build_plan(o, host);
  if (!built.value) {
    say(built.error);
    return exit_launcher_error;
  }
  plan& p = *built.value;
  p.terminal = caller_has_terminal();
  p.new_session = p.terminal || caller_has_controlling_terminal();
  if (o.verbose) {
    for (const auto& s : p.mounts)
      say(str_cat("plan: ", describe(s)));
    switch (p.home.mode) {
      case home_mode::layer:
        say(str_cat("home: ", p.home.path, " with a private writable layer (tmpfs, ", p.tmpfs_bytes,
                    " bytes): writes there are discarded at exit"));
        break;
      case home_mode::dir:
        say(str_cat("home: ", p.home.path, " is ", p.home.source, ": writes there are kept"));
        break;
      case home_mode::scratch:
        say(str_cat("home: ", p.home.path, " (no home on the host): an empty tmpfs, discarded"));
        break;
    }
    say(str_cat("writes: the work directory ", p.workdir,
                " and --rw paths go to the host; /tmp, /var/tmp, /dev/shm (tmpfs, ", p.tmpfs_bytes,
                " bytes each) are discarded"));
    if (!p.env.dropped.empty()) {
      std::string names;
      for (const auto& n : p.env.dropped)
        names += str_cat(names.empty() ? "" : " ", n);
      say(str_cat("environment: dropped secret-looking ", names));
    }
  }
  mount_context ctx;
  if (!prepare_staging(p, ctx)) {
    say(str_cat("cannot prepare the jail: ", last_step_error()));
    return exit_launcher_error;
  }
  relay::config relay_cfg;
  relay_cfg.upstream = *parse_proxy_address(p.relay.proxy);  // validated by build_plan
  if (p.relay.proxy_protocol) relay_cfg.agent = p.relay.agent;
  relay_cfg.hostname = p.hostname;

  // --self-test: the host's side of the probes (canaries the jail must not reach).
  self_test_setup probes;
  if (p.self_test && !prepare_self_test(p, probes)) {
    say(str_cat("--self-test: ", last_step_error()));
    return exit_launcher_error;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    say(str_cat("socketpair: ", std::strerror(errno)));
    return exit_launcher_error;
  }
  // Blocked before clone so that no signal is lost between now and the wait loop; the jail's
  // init inherits the mask and takes them with sigwaitinfo.
  const sigset_t set = jail_signal_set();
  sigset_t old_mask;
  ::sigprocmask(SIG_BLOCK, &set, &old_mask);
  std::fflush(nullptr);

  const pid_t child = clone_into_namespaces(p.clone_flags);
  if (child == 0) {
    ::close(sv[0]);
    jail_main(p, ctx, sv[1], probes);
  }
  const int clone_errno = errno;
  ::close(sv[1]);
  std::unique_ptr<int, void (*)(int*)> sock(&sv[0], [](int* fd) { ::close(*fd); });
  if (child < 0) {
    say(explain_namespace_failure(p.clone_flags, clone_errno));
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return exit_launcher_error;
  }
  jail_guard guard(child);
  jail_limits limits;  // destroyed after guard: the cgroups are removed once the jail is gone

  if (!write_id_maps(child, p)) {
    say(str_cat("cannot map user ids into the jail: ", last_step_error()));
    return exit_launcher_error;
  }
  // Where no limit is asked for there is nothing to place: skip reading the cgroup layout.
  const bool any_limit = p.limits.memory_bytes || p.limits.cpu_millis || p.limits.pids;
  limits.setup(p.limits, child, any_limit ? read_cgroup_layout() : cgroup_layout{},
               str_cat("airlock-", ::getpid()));
  if (o.verbose) {
    std::string line = str_cat("limits: ", limits.summary());
    if (p.limits.timeout) line += str_cat(" timeout=", format_ms(*p.limits.timeout));
    say(line);
  }
  if (!send_message(*sock, message_type::go, limits.rlimit_mask())) {
    say(str_cat("cannot start the jail: ", last_step_error()));
    return exit_launcher_error;
  }
  // While the jail sets up its network and mounts, compile its seccomp filter here: the jail
  // then only loads it. A jail that died meanwhile shows in the loop below.
  {
    const int filter_fd = compile_seccomp_filter();
    if (filter_fd < 0)
      AIRLOCK_LOG(debug, "launcher", "seccomp: the jail compiles it (", last_step_error(), ')');
    (void)send_message(*sock, message_type::filter, 0, {}, filter_fd);
    if (filter_fd >= 0) ::close(filter_fd);
  }

  // The jail's sockets arrive one by one; the relay starts once the command is about to run.
  // (A connection or a query the command makes before then waits in the socket's queue.)
  struct fd_holder {
    int fd = -1;
    ~fd_holder() {
      if (fd >= 0) ::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
  } relay_fd, capture_v4, capture_v6, dns_fd, terminal_fd;
  while (true) {
    auto m = receive_message(*sock);
    if (!m) {
      say("the jail's setup process died before the command started");
      return exit_launcher_error;
    }
    if (m->type == message_type::relay_fd && m->fd >= 0) {
      fd_holder* slot = nullptr;
      switch (static_cast<socket_role>(m->flags)) {
        case socket_role::relay:
          slot = &relay_fd;
          break;
        case socket_role::capture_v4:
          slot = &capture_v4;
          break;
        case socket_role::capture_v6:
          slot = &capture_v6;
          break;
        case socket_role::dns:
          slot = &dns_fd;
          break;
        case socket_role::terminal:
          slot = &terminal_fd;
          break;
      }
      if (slot == nullptr || slot->fd >= 0) {
        ::close(m->fd);
        say("unexpected socket from the jail");
        return exit_launcher_error;
      }
      slot->fd = m->fd;
      continue;
    }
    if (m->type == message_type::notice) {
      say(m->text);
      continue;
    }
    if (m->type == message_type::failed) {
      say(str_cat("cannot confine the command (", m->text, "); it was not started"));
      return exit_launcher_error;
    }
    if (m->type == message_type::ready && relay_fd.fd >= 0) break;
    say("unexpected message from the jail");
    return exit_launcher_error;
  }
  const bool captured = capture_v4.fd >= 0 && dns_fd.fd >= 0;
  if (p.capture.required && !captured) {
    say("--capture: the jail did not set up transparent capture");
    return exit_launcher_error;
  }
  if (captured) {
    relay_cfg.capture_v4 = capture_v4.release();
    relay_cfg.capture_v6 = capture_v6.release();
    relay_cfg.dns = dns_fd.release();
    relay_cfg.resolver_ipv6 = relay_cfg.capture_v6 >= 0;
  }
  terminal_relay term;
  if (terminal_fd.fd >= 0) term.start(terminal_fd.release());
  // Each connection's program, for rules with `binaries` (peer_identity.hpp).
  if (relay_cfg.agent) relay_cfg.identity_init = child;
  auto rel = std::make_unique<relay>(relay_fd.release(), relay_cfg);
  if (!rel->start()) {
    say(str_cat("cannot start the relay: ", last_step_error()));
    return exit_launcher_error;
  }
  if (o.verbose) {
    say(str_cat("relay: 127.0.0.1:", p.relay.port, " inside -> ", to_string(relay_cfg.upstream),
                p.relay.proxy_protocol ? str_cat(" (PROXY v2, agent ", *p.relay.agent, ')')
                                       : std::string()));
    if (captured) {
      say(str_cat("capture: resolver 127.0.0.1:53 inside; TCP to any address but loopback",
                  relay_cfg.resolver_ipv6 ? " (IPv4 and IPv6)" : " (IPv4)",
                  " -> the proxy as CONNECT name:port or absolute-form HTTP"));
    }
  }

  // ---- wait, forwarding signals, until the jail's init exits -----------------------------
  const int sfd = ::signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    say(str_cat("signalfd: ", std::strerror(errno)));
    return exit_launcher_error;
  }
  std::unique_ptr<int, void (*)(int*)> sfd_guard(new int(sfd), [](int* fd) {
    ::close(*fd);
    delete fd;
  });
  using clock = std::chrono::steady_clock;
  // A plain time point and a flag (not an optional: GCC 12 -O2 warns it may be read unset).
  const bool has_deadline = p.limits.timeout.has_value();
  const clock::time_point deadline =
      has_deadline ? clock::now() + *p.limits.timeout : clock::time_point{};
  bool timed_out = false;
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    int wait_ms = -1;
    if (has_deadline && !timed_out) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0) {
        // SIGKILL to the namespace's init: the kernel then kills every process in it
        // (pid_namespaces(7)), so nothing of the tree survives, whatever it does.
        ::kill(child, SIGKILL);
        timed_out = true;
        continue;
      }
      wait_ms = static_cast<int>(std::min<std::int64_t>(left.count() + 1, 1 << 30));
    }
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    term.add_poll(fds);
    const int n = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), wait_ms);
    if (n <= 0) continue;
    term.handle(fds);
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo info{};
    if (::read(sfd, &info, sizeof info) != sizeof info) continue;
    if (info.ssi_signo == SIGCHLD) continue;
    if (info.ssi_signo == SIGWINCH && term.active()) {
      term.resize();  // the kernel tells the command (tty_ioctl(4), TIOCSWINSZ)
      continue;
    }
    ::kill(child, static_cast<int>(info.ssi_signo));
  }
  guard.reaped();
  term.finish();
  rel->stop();
  const bool oom = limits.oom_killed();
  limits.cleanup();
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  if (timed_out) {
    say(str_cat("timed out after ", format_ms(*p.limits.timeout), "; killed ", p.argv[0]));
    return exit_timeout;
  }
  const int code = status_to_code(status);
  if (code == exit_killed && oom) {
    say(str_cat("killed: memory limit reached (--memory ", *p.limits.memory_bytes, " bytes)"));
    return exit_killed;
  }
  if (WIFSIGNALED(status)) {
    // The init itself died by a signal (OOM killer, or someone killed it): not CMD's doing.
    say(str_cat("the jail was killed by signal ", WTERMSIG(status)));
  }
  if (p.self_test) return finish_self_test(p, probes, code);
  return code;
}

}  // namespace airlock::launcher
