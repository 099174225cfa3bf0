// The probes of `airlock run --self-test` (self_test.hpp), run inside the jail in place of
// the command. Each writes one row "VERDICT\tPROBE\tDETAIL": VERDICT is "refused:LAYER",
// "out" (it got out) or "info". The layer is inferred from the answer: EPERM from a call the
// filter denies is seccomp; ECONNREFUSED or ENETUNREACH on a host address is the network
// namespace; ENOENT on a host path is the mount namespace; EACCES on a hidden path is the
// hide; EROFS is the read-only root.
#include "core/str_cat.hpp"
#include "launcher/env.hpp"
#include "launcher/self_test.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::launcher {
namespace {

using core::str_cat;

class reporter {
 public:
  explicit reporter(int fd) : fd_(fd) {}
  void row(std::string_view verdict, std::string_view probe, std::string_view detail) const {
    const std::string line = str_cat(verdict, '\t', probe, '\t', detail, '\n');
    (void)!::write(fd_, line.data(), line.size());
  }
  // A call that should fail: its result and errno decide, with the layer named for `expected`.
  template <typename F>
  void call(std::string_view probe, F&& f, int expected, std::string_view layer) const {
    errno = 0;
    const long rc = static_cast<long>(f());
    const int err = errno;
    if (rc >= 0) {
      row("out", probe, "succeeded");
    } else if (err == expected) {
      row(str_cat("refused:", layer), probe, std::strerror(err));
    } else {
      row("refused:kernel", probe, std::strerror(err));
    }
  }

 private:
  int fd_;
};

// connect() with a 3 s limit; 0 or the errno.
int try_connect(int family, int type, const sockaddr* addr, socklen_t len) {
  const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = 0;
  if (::connect(fd, addr, len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 3000) == 1) {
        socklen_t l = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  ::close(fd);
  return err;
}

void probe_network(const reporter& r, const self_test_setup& s) {
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  auto tcp = [&](std::string_view name, int family, sockaddr* a, socklen_t len) {
    const int err = try_connect(family, SOCK_STREAM, a, len);
    if (err == 0) return r.row("out", name, "connected");
    r.row("refused:network namespace", name, std::strerror(err));
  };
  v4.sin_port = htons(s.tcp4_port);
  tcp("TCP to the host's 127.0.0.1 (canary)", AF_INET, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  v6.sin6_port = htons(s.tcp6_port);
  if (s.tcp6 >= 0)
    tcp("TCP to the host's ::1 (canary)", AF_INET6, reinterpret_cast<sockaddr*>(&v6), sizeof v6);
  // UDP: the datagram leaves or not; the launcher's canary tells (its own row).
  auto udp = [&](int family, sockaddr* a, socklen_t len) {
    const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      (void)::sendto(fd, "airlock-self-test", 17, 0, a, len);
      ::close(fd);
    }
  };
  v4.sin_port = htons(s.udp4_port);
  udp(AF_INET, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  v6.sin6_port = htons(s.udp6_port);
  if (s.udp6 >= 0) udp(AF_INET6, reinterpret_cast<sockaddr*>(&v6), sizeof v6);

  r.call(
      "raw IPv4 socket", [] { return ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP); },
      EPERM, "seccomp");
  r.call(
      "packet socket", [] { return ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); }, EPERM,
      "seccomp");

  // DNS straight to the host's resolvers (a query for a name that cannot exist).
  static const unsigned char query[] = {0x41, 0x4c, 0x01, 0x00, 0,   1,   0,   0,   0,   0, 0,
                                        0,    7,    'a',  'i',  'r', 'l', 'o', 'c', 'k', 7, 'i',
                                        'n',  'v',  'a',  'l',  'i', 'd', 0,   0,   1,   0, 1};
  for (const auto& ns : s.nameservers) {
    const std::string name = str_cat("DNS to the host's resolver ", ns);
    sockaddr_storage ss{};
    socklen_t len = 0;
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET, ns.c_str(), &a4->sin_addr) == 1) {
      a4->sin_family = AF_INET;
      a4->sin_port = htons(53);
      len = sizeof *a4;
    } else if (::inet_pton(AF_INET6, ns.c_str(), &a6->sin6_addr) == 1) {
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons(53);
      len = sizeof *a6;
    } else {
      continue;
    }
    const int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int err = 0;
    if (::sendto(fd, query, sizeof query, 0, reinterpret_cast<sockaddr*>(&ss), len) < 0) {
      err = errno;
    } else {
      pollfd p{fd, POLLIN, 0};
      char answer[512];
      if (::poll(&p, 1, 2000) == 1 && ::recv(fd, answer, sizeof answer, 0) > 0) {
        // Inside, 127.0.0.1 is the jail's own loopback: with capture, its own resolver
        // answers there (from its pool, asking no one).
        if (ns == "127.0.0.1")
          r.row("info", name, "answered by the jail's own resolver on its own loopback");
        else
          r.row("out", name, "answered");
        ::close(fd);
        continue;
      }
      err = errno == 0 ? ETIMEDOUT : errno;
      if (p.revents == 0) err = ETIMEDOUT;
    }
    ::close(fd);
    r.row("refused:network namespace", name, std::strerror(err));
  }
}

void probe_unix(const reporter& r, const self_test_setup& s) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, s.abstract_name.data(), s.abstract_name.size());
  const auto alen =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + s.abstract_name.size());
  int err = try_connect(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&a), alen);
  if (err == 0) {
    r.row("out", "abstract Unix socket of the host (canary)", "connected");
  } else {
    r.row("refused:network namespace", "abstract Unix socket of the host (canary)",
          std::strerror(err));
  }
  for (const auto& path : s.path_sockets) {
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    std::strncpy(u.sun_path, path.c_str(), sizeof u.sun_path - 1);
    const std::string name = str_cat("Unix socket ", path, " (canary)");
    err = try_connect(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&u), sizeof u);
    if (err == 0) {
      r.row("out", name, "connected");
    } else {
      r.row(err == ENOENT ? "refused:mount namespace (private directory)" : "refused:kernel", name,
            std::strerror(err));
    }
  }
}

void probe_files(const reporter& r, const plan& p, const self_test_setup& s) {
  for (const auto& h : p.hidden) {
    const int fd = ::open(h.c_str(), O_RDONLY | O_CLOEXEC);
    const int err = errno;
    if (fd >= 0) {
      // A directory opens; what counts is whether anything in it can be listed or read.
      char buf[1];
      const bool readable = ::read(fd, buf, 1) >= 0 || errno != EISDIR;
      const bool listable = ::faccessat(AT_FDCWD, h.c_str(), R_OK | X_OK, AT_EACCESS) == 0;
      ::close(fd);
      if (readable && listable) {
        r.row("out", str_cat("read hidden ", h), "readable");
        continue;
      }
    }
    r.row(err == ENOENT ? "refused:mount namespace" : "refused:hidden", str_cat("read hidden ", h),
          fd >= 0 ? "not readable" : std::strerror(err));
  }
  for (const auto& dir : s.canary_dirs) {
    const std::string f = dir + "/written-from-the-jail";
    const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      r.row("out", str_cat("write ", f), "created");
    } else {
      r.row(errno == ENOENT ? "refused:mount namespace (private directory)"
                            : "refused:read-only root",
            str_cat("write ", f), std::strerror(errno));
    }
  }
  int fd = -1;
  r.call(
      "write /etc/airlock-self-test",
      [&] {
        return fd = ::open("/etc/airlock-self-test", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      },
      EROFS, "read-only root");
  if (fd >= 0) ::close(fd);
}

void probe_process(const reporter& r, const self_test_setup& s) {
  // TIOCSTI and TIOCLINUX on every standard descriptor and /dev/tty, also with junk in the
  // request's high 32 bits (CVE-2019-10063).
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  char c = ' ';
  for (int fd : {0, 1, 2, tty}) {
    if (fd < 0) continue;
    const std::string where = fd == tty ? "/dev/tty" : str_cat("fd ", fd);
    r.call(
        str_cat("ioctl(TIOCSTI) on ", where), [&] { return ::syscall(SYS_ioctl, fd, TIOCSTI, &c); },
        EPERM, "seccomp");
    r.call(
        str_cat("ioctl(TIOCSTI | 1<<32) on ", where),
        [&] {
          return ::syscall(SYS_ioctl, fd, static_cast<unsigned long>(TIOCSTI) | (1UL << 32), &c);
        },
        EPERM, "seccomp");
    char sel[2] = {12, 0};  // TIOCL_GETSHIFTSTATE, harmless even if allowed
    r.call(
        str_cat("ioctl(TIOCLINUX) on ", where),
        [&] { return ::syscall(SYS_ioctl, fd, TIOCLINUX, sel); }, EPERM, "seccomp");
  }
  if (tty >= 0) ::close(tty);
  r.call(
      str_cat("ptrace the launcher (host pid ", s.host_pid, ')'),
      [&] { return ::ptrace(PTRACE_ATTACH, s.host_pid, nullptr, nullptr); }, EPERM, "seccomp");
  r.call(
      "ptrace the jail's init", [] { return ::ptrace(PTRACE_ATTACH, 1, nullptr, nullptr); }, EPERM,
      "seccomp");
  long ring = -1;
  r.call(
      "io_uring_setup",
      [&] {
        io_uring_params params{};
        return ring = ::syscall(SYS_io_uring_setup, 4, &params);
      },
      EPERM, "seccomp");
  if (ring >= 0) ::close(static_cast<int>(ring));
  r.call(
      "unshare(CLONE_NEWUSER)", [] { return ::unshare(CLONE_NEWUSER); }, EPERM, "seccomp");
  r.call(
      "unshare(CLONE_NEWNET)", [] { return ::unshare(CLONE_NEWNET); }, EPERM, "seccomp");
  r.call(
      "mount(tmpfs)", [] { return ::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr); }, EPERM,
      "seccomp");
  r.call(
      "personality(READ_IMPLIES_EXEC)", [] { return ::personality(READ_IMPLIES_EXEC); }, EPERM,
      "seccomp");
  r.call(
      "bpf", [] { return ::syscall(SYS_bpf, 0, nullptr, 0); }, EPERM, "seccomp");
}

void probe_limits(const reporter& r, const plan& p) {
  struct statfs st {};
  if (::statfs("/tmp", &st) == 0) {
    const auto size =
        static_cast<std::uint64_t>(st.f_blocks) * static_cast<std::uint64_t>(st.f_bsize);
    r.row(size <= p.tmpfs_bytes + (1U << 20) ? "refused:tmpfs size" : "out", "fill /tmp",
          str_cat("holds at most ", size, " bytes"));
  }
  auto limit = [&](int which, std::string_view name, const std::optional<std::uint64_t>& want) {
    rlimit rl{};
    ::getrlimit(which, &rl);
    if (!want) {
      r.row("info", name,
            rl.rlim_max == RLIM_INFINITY ? std::string("unlimited") : str_cat(rl.rlim_max));
      return;
    }
    rlimit raise{rl.rlim_max, rl.rlim_max == RLIM_INFINITY ? RLIM_INFINITY : rl.rlim_max + 1};
    const bool raised = ::setrlimit(which, &raise) == 0;
    r.row(rl.rlim_max == *want && !raised ? "refused:rlimit" : "out", str_cat("raise ", name),
          str_cat("hard limit ", rl.rlim_max));
  };
  limit(RLIMIT_FSIZE, "RLIMIT_FSIZE (--fsize)", p.limits.fsize_bytes);
  limit(RLIMIT_NOFILE, "RLIMIT_NOFILE (--nofile)", p.limits.nofile);
  // The command's environment (this process never execs: its own is the launcher's).
  for (const auto& e : p.env.entries) {
    std::string_view entry = e;
    const auto eq = entry.find('=');
    // The CA variables the launcher sets (AWS_CA_BUNDLE looks like a credential) are no secret.
    if (eq != std::string_view::npos && !entry.substr(eq + 1).starts_with("/run/airlock/") &&
        looks_secret(entry.substr(0, eq), entry.substr(eq + 1)))
      r.row("info", str_cat("secret-looking variable ", entry.substr(0, eq)),
            "set inside (by --env or a --policy placeholder)");
  }
}

}  // namespace

void run_probes(const plan& p, const self_test_setup& s) {
  const reporter r(s.report_write);
  probe_network(r, s);
  probe_unix(r, s);
  probe_files(r, p, s);
  probe_process(r, s);
  probe_limits(r, p);
  ::_exit(0);
}

}  // namespace airlock::launcher
