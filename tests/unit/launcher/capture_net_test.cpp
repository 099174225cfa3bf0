#include "launcher/capture_net.hpp"

#include "launcher/network.hpp"
#include "launcher/relay.hpp"
#include "launcher/step.hpp"

#include "../support/skip.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace airlock::launcher {
namespace {

// Runs body in a child in new user and network namespaces (as `unshare -Urn` would), where
// it may change routes and nftables without touching the host. The child writes a line per
// failure to the pipe; an empty result is success. Skips where the kernel refuses.
template <typename Body>
void in_private_netns(Body body) {
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    auto report = [&](const std::string& line) {
      (void)!::write(pipefd[1], line.data(), line.size());
      (void)!::write(pipefd[1], "\n", 1);
    };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      report("SKIP unshare: " + std::string(std::strerror(errno)));
      ::_exit(0);
    }
    auto write_file = [](const char* path, const std::string& text) {
      const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
      if (fd < 0) return false;
      const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      return ok;
    };
    write_file("/proc/self/setgroups", "deny");
    if (!write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      report("SKIP cannot write id maps");
      ::_exit(0);
    }
    if (!bring_up_loopback()) {
      report("lo: " + last_step_error());
      ::_exit(1);
    }
    body(report);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  if (out.starts_with("SKIP")) AIRLOCK_SKIP_UNLESS_CI(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(out, "");
}

// A blocking connect with a bound on the wait; returns errno (0 on success) and the socket.
int connect_with_timeout(int family, const sockaddr* addr, socklen_t len, int& fd_out) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  fd_out = fd;
  if (::connect(fd, addr, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, 3000) != 1) return ETIMEDOUT;
  int err = 0;
  socklen_t el = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
  return err;
}

std::string describe(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    return std::string(text) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
  return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6->sin6_port));
}

TEST(LauncherCaptureNet, TcpToAnyAddressIsRedirectedAndNothingElseIsRouted) {
  in_private_netns([](auto report) {
    capture_sockets cs;
    if (!set_up_capture(cs)) {
      report("set_up_capture: " + last_step_error());
      return;
    }
    if (local_port(cs.dns) != 53) report("resolver socket not on port 53");

    // TCP to a pool address and to an arbitrary one: both land on the capture listener,
    // which can tell where each was going.
    for (const char* ip : {"198.18.0.7", "192.0.2.10"}) {
      sockaddr_in dst{};
      dst.sin_family = AF_INET;
      dst.sin_port = htons(443);
      ::inet_pton(AF_INET, ip, &dst.sin_addr);
      int fd = -1;
      const int err =
          connect_with_timeout(AF_INET, reinterpret_cast<sockaddr*>(&dst), sizeof dst, fd);
      if (err != 0) {
        report(std::string("connect ") + ip + ": " + std::strerror(err));
        continue;
      }
      const int accepted = ::accept4(cs.v4, nullptr, nullptr, SOCK_CLOEXEC);
      if (accepted < 0) {
        report("accept after connect to " + std::string(ip));
        continue;
      }
      auto orig = original_destination_of(accepted);
      if (!orig || describe(*orig) != std::string(ip) + ":443")
        report("original destination " + (orig ? describe(*orig) : "none") + " for " + ip);
      ::close(accepted);
      ::close(fd);
    }
    if (cs.v6 >= 0) {
      sockaddr_in6 dst{};
      dst.sin6_family = AF_INET6;
      dst.sin6_port = htons(80);
      ::inet_pton(AF_INET6, "fd61:6972:6c6b::7", &dst.sin6_addr);
      int fd = -1;
      const int err =
          connect_with_timeout(AF_INET6, reinterpret_cast<sockaddr*>(&dst), sizeof dst, fd);
      if (err != 0) {
        report(std::string("connect v6: ") + std::strerror(err));
      } else {
        const int accepted = ::accept4(cs.v6, nullptr, nullptr, SOCK_CLOEXEC);
        auto orig = accepted >= 0 ? original_destination_of(accepted) : std::nullopt;
        if (!orig || describe(*orig) != "[fd61:6972:6c6b::7]:80")
          report("v6 original destination " + (orig ? describe(*orig) : "none"));
        if (accepted >= 0) ::close(accepted);
      }
      ::close(fd);
    }

    // Loopback is not captured: nothing listens on this port, so the connection is refused.
    {
      sockaddr_in dst{};
      dst.sin_family = AF_INET;
      dst.sin_port = htons(9);
      dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      int fd = -1;
      const int err =
          connect_with_timeout(AF_INET, reinterpret_cast<sockaddr*>(&dst), sizeof dst, fd);
      if (err != ECONNREFUSED) report(std::string("loopback: ") + std::strerror(err));
      ::close(fd);
    }
    // UDP (and so QUIC and DNS to elsewhere) has no route at all, to any address.
    for (const char* ip : {"192.0.2.1", "198.18.0.7"}) {
      const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      sockaddr_in dst{};
      dst.sin_family = AF_INET;
      dst.sin_port = htons(53);
      ::inet_pton(AF_INET, ip, &dst.sin_addr);
      if (::connect(u, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0 || errno != ENETUNREACH)
        report(std::string("UDP to ") + ip + " is routed");
      ::close(u);
    }
    const int u6 = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u6 >= 0) {
      sockaddr_in6 dst{};
      dst.sin6_family = AF_INET6;
      dst.sin6_port = htons(443);
      ::inet_pton(AF_INET6, "2001:db8::1", &dst.sin6_addr);
      if (::connect(u6, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0)
        report("UDP over IPv6 is routed");
      ::close(u6);
    }
    cs.close_all();
  });
}

TEST(LauncherCaptureNet, SecondSetupFailsCleanly) {
  in_private_netns([](auto report) {
    capture_sockets first;
    if (!set_up_capture(first)) {
      report("first: " + last_step_error());
      return;
    }
    first.close_all();
    // The routing rule exists now: a second setup gets as far as the routes, must fail there
    // (EEXIST), say so, and close everything it opened.
    capture_sockets second;
    if (set_up_capture(second)) report("a second setup succeeded");
    if (second.v4 >= 0 || second.v6 >= 0 || second.dns >= 0) report("sockets left open");
    if (last_step_error().find("capture routing") == std::string::npos)
      report("unexpected error: " + last_step_error());
  });
}

}  // namespace
}  // namespace airlock::launcher
