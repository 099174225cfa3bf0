#include "launcher/run.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "core/unique_fd.hpp"
#include "launcher/address.hpp"
#include "launcher/channel.hpp"
#include "launcher/exit_codes.hpp"
#include "launcher/host.hpp"
#include "launcher/limits.hpp"
#include "launcher/mounts.hpp"
#include "launcher/namespaces.hpp"
#include "launcher/plan.hpp"
#include "launcher/relay.hpp"
#include "launcher/run_jail.hpp"
#include "launcher/seccomp.hpp"
#include "launcher/self_test.hpp"
#include "launcher/step.hpp"
#include "launcher/terminal.hpp"
#include "launcher/trust.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace airlock::launcher {
namespace {

using core::str_cat;
using run_detail::format_ms;
using run_detail::jail_signal_set;
using run_detail::say;
using run_detail::say_plan;
using run_detail::status_to_code;

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

// The jail's sockets, each in its slot (channel.hpp's socket_role).
struct jail_sockets {
  core::unique_fd relay_fd, capture_v4, capture_v6, dns_fd, terminal_fd;
};

// Takes the jail's sockets as they arrive, its notices and its failure, until it is ready to
// run the command. False (said) when the jail failed or spoke out of turn.
bool receive_jail_sockets(int sock, jail_sockets& js) {
  auto& [relay_fd, capture_v4, capture_v6, dns_fd, terminal_fd] = js;
  while (true) {
    auto m = receive_message(sock);
    if (!m) {
      say("the jail's setup process died before the command started");
      return false;
    }
    if (m->type == message_type::relay_fd && m->fd >= 0) {
      core::unique_fd* slot = nullptr;
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
      core::unique_fd received(m->fd);
      if (slot == nullptr || *slot) {
        say("unexpected socket from the jail");
        return false;
      }
      *slot = std::move(received);
      continue;
    }
    if (m->type == message_type::notice) {
      say(m->text);
      continue;
    }
    if (m->type == message_type::failed) {
      say(str_cat("cannot confine the command (", m->text, "); it was not started"));
      return false;
    }
    if (m->type == message_type::ready && relay_fd) return true;
    say("unexpected message from the jail");
    return false;
  }
}

// Hands the jail's sockets to the relay (and its pty to `term`) and starts it, once the jail
// is about to run the command. nullptr (said) when capture was required but not set up, or the
// relay cannot start.
std::unique_ptr<relay> start_relay(const plan& p, bool verbose, pid_t child, jail_sockets& js,
                                   relay::config& relay_cfg, terminal_relay& term) {
  auto& [relay_fd, capture_v4, capture_v6, dns_fd, terminal_fd] = js;
  const bool captured = capture_v4 && dns_fd;
  if (p.capture.required && !captured) {
    say("--capture: the jail did not set up transparent capture");
    return nullptr;
  }
  if (captured) {
    relay_cfg.capture_v4 = capture_v4.release();
    relay_cfg.capture_v6 = capture_v6.release();
    relay_cfg.dns = dns_fd.release();
    relay_cfg.resolver_ipv6 = relay_cfg.capture_v6 >= 0;
    relay_cfg.dns_allow = p.capture.dns_allow;
  }
  if (terminal_fd) term.start(terminal_fd.release());
  // Each connection's program, for rules with `binaries` (peer_identity.hpp).
  if (relay_cfg.agent) relay_cfg.identity_init = child;
  auto rel = std::make_unique<relay>(relay_fd.release(), relay_cfg);
  if (!rel->start()) {
    say(str_cat("cannot start the relay: ", last_step_error()));
    return nullptr;
  }
  if (verbose) {
    say(str_cat("relay: 127.0.0.1:", p.relay.port, " inside -> ", to_string(relay_cfg.upstream),
                p.relay.proxy_protocol ? str_cat(" (PROXY v2, agent ", *p.relay.agent, ')')
                                       : std::string()));
    if (captured) {
      say(str_cat("capture: resolver 127.0.0.1:53 inside; TCP to any address but loopback",
                  relay_cfg.resolver_ipv6 ? " (IPv4 and IPv6)" : " (IPv4)",
                  " -> the proxy as CONNECT name:port or absolute-form HTTP"));
    }
  }
  return rel;
}

// Waits until the jail's init exits, passing signals on (a new window size to the pty) and
// killing the jail at --timeout (timed_out set). Returns the init's wait status.
int wait_for_jail(pid_t child, const plan& p, int sfd, terminal_relay& term, bool& timed_out) {
  using clock = std::chrono::steady_clock;
  // A plain time point and a flag (not an optional: GCC 12 -O2 warns it may be read unset).
  const bool has_deadline = p.limits.timeout.has_value();
  const clock::time_point deadline =
      has_deadline ? clock::now() + *p.limits.timeout : clock::time_point{};
  int status = 0;
  while (true) {
    const pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) return status;
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
    if (term.suspend_requested()) {
      term.suspend();
      ::raise(SIGTSTP);  // the caller's shell takes over; returns once we are continued
      term.resume();
    }
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo info{};
    if (::read(sfd, &info, sizeof info) != sizeof info) continue;
    if (info.ssi_signo == SIGCHLD) continue;
    if (info.ssi_signo == SIGCONT) {
      term.resume();  // fg (also after bg): the terminal mode, and the jail's group
      continue;
    }
    if (info.ssi_signo == SIGWINCH && term.active()) {
      term.resize();  // the kernel tells the command (tty_ioctl(4), TIOCSWINSZ)
      continue;
    }
    ::kill(child, static_cast<int>(info.ssi_signo));
  }
}

// The launcher's exit status for the jail's end (exit_codes.hpp), saying why where it was not
// the command's own doing.
int exit_status(const plan& p, int status, bool timed_out, bool oom, self_test_setup& probes) {
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
  if (o.verbose) say_plan(p);
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
    run_detail::jail_main(p, ctx, sv[1], probes);
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
  jail_sockets js;
  if (!receive_jail_sockets(*sock, js)) return exit_launcher_error;
  terminal_relay term;
  auto rel = start_relay(p, o.verbose, child, js, relay_cfg, term);
  if (!rel) return exit_launcher_error;

  // ---- wait, forwarding signals, until the jail's init exits -----------------------------
  // SIGCONT too, for the launcher alone (the jail's init does not wait for it): after ^Z, fg
  // puts the terminal back (terminal_relay::resume). Blocking it does not stop it continuing
  // us (signal(7)); old_mask is restored below.
  sigset_t with_cont = set;
  sigaddset(&with_cont, SIGCONT);
  ::sigprocmask(SIG_BLOCK, &with_cont, nullptr);
  const int sfd = ::signalfd(-1, &with_cont, SFD_CLOEXEC);
  if (sfd < 0) {
    say(str_cat("signalfd: ", std::strerror(errno)));
    return exit_launcher_error;
  }
  const core::unique_fd sfd_owned(sfd);
  bool timed_out = false;
  const int status = wait_for_jail(child, p, sfd, term, timed_out);
  guard.reaped();
  term.finish();
  rel->stop();
  const bool oom = limits.oom_killed();
  limits.cleanup();
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  return exit_status(p, status, timed_out, oom, probes);
}

}  // namespace airlock::launcher
