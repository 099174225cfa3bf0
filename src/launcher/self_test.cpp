// The host's side of `airlock run --self-test` (self_test.hpp): canaries before the jail,
// the table after it.
#include "launcher/self_test.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace airlock::launcher {
namespace {

using core::str_cat;

// A listener (TCP or Unix) or bound UDP socket; -1 with the failure recorded.
int canary(int family, int type, sockaddr* addr, socklen_t len) {
  const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, addr, len) != 0 || (type == SOCK_STREAM && ::listen(fd, 16) != 0)) {
    step_failed("bind(canary)");
    ::close(fd);
    return -1;
  }
  return fd;
}

std::uint16_t port_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

// Whether anything knocked on fd: a pending connection or datagram.
bool knocked(int fd) {
  if (fd < 0) return false;
  char buf[64];
  int type = 0;
  socklen_t len = sizeof type;
  ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
  if (type == SOCK_DGRAM) return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) >= 0;
  const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (c < 0) return false;
  ::close(c);
  return true;
}

void remove_tree(const std::string& dir) {
  ::nftw(
      dir.c_str(),
      [](const char* p, const struct stat*, int type, FTW*) {
        return type == FTW_DP ? ::rmdir(p) : ::unlink(p);
      },
      16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

void self_test_setup::close_all() noexcept {
  for (int* fd : {&report_read, &report_write, &tcp4, &tcp6, &udp4, &udp6, &abstract_unix}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  for (int fd : path_unix)
    ::close(fd);
  path_unix.clear();
  for (const auto& dir : canary_dirs)
    remove_tree(dir);
  canary_dirs.clear();
}

bool prepare_self_test(const plan& p, self_test_setup& s) {
  (void)p;
  s.host_pid = ::getpid();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return step_failed("pipe2");
  s.report_read = fds[0];
  s.report_write = fds[1];
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  s.tcp4 = canary(AF_INET, SOCK_STREAM, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  s.udp4 = canary(AF_INET, SOCK_DGRAM, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  if (s.tcp4 < 0 || s.udp4 < 0) return false;
  s.tcp4_port = port_of(s.tcp4);
  s.udp4_port = port_of(s.udp4);
  // IPv6 only where the host has it.
  s.tcp6 = canary(AF_INET6, SOCK_STREAM, reinterpret_cast<sockaddr*>(&v6), sizeof v6);
  s.udp6 = canary(AF_INET6, SOCK_DGRAM, reinterpret_cast<sockaddr*>(&v6), sizeof v6);
  if (s.tcp6 >= 0) s.tcp6_port = port_of(s.tcp6);
  if (s.udp6 >= 0) s.udp6_port = port_of(s.udp6);
  s.abstract_name = str_cat("airlock-self-test-", s.host_pid);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, s.abstract_name.data(), s.abstract_name.size());
  s.abstract_unix =
      canary(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&a),
             static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + s.abstract_name.size()));
  if (s.abstract_unix < 0) return false;
  // Path sockets and write targets in the host's temporary directories (the jail's are its
  // own: a --rw or --ro that exposes them shows here).
  for (const char* base : {"/tmp", "/var/tmp"}) {
    std::string dir = str_cat(base, "/airlock-self-test.XXXXXX");
    if (::mkdtemp(dir.data()) == nullptr) continue;
    ::chmod(dir.c_str(), 0755);
    s.canary_dirs.push_back(dir);
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    const std::string path = dir + "/canary.sock";
    std::strncpy(u.sun_path, path.c_str(), sizeof u.sun_path - 1);
    const int fd = canary(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&u), sizeof u);
    if (fd < 0) return false;
    s.path_unix.push_back(fd);
    s.path_sockets.push_back(path);
  }
  std::ifstream resolv("/etc/resolv.conf");
  std::string line;
  while (std::getline(resolv, line) && s.nameservers.size() < 3) {
    std::istringstream words(line);
    std::string key, value;
    if (words >> key >> value && key == "nameserver") s.nameservers.push_back(value);
  }
  return true;
}

int finish_self_test(const plan& p, self_test_setup& s, int jail_code) {
  (void)p;
  ::close(s.report_write);
  s.report_write = -1;
  std::string report;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(s.report_read, buf, sizeof buf)) > 0)
    report.append(buf, static_cast<std::size_t>(n));
  ::close(s.report_read);
  s.report_read = -1;

  struct row {
    std::string verdict, probe, detail;
  };
  std::vector<row> rows;
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    if (t1 == std::string::npos || t2 == std::string::npos) continue;
    rows.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1)});
  }
  // What the canaries saw decides the probes the jail cannot judge itself (UDP), and
  // overrules a probe that thought it was refused.
  auto host_row = [&](std::string probe, int fd) {
    if (fd < 0) return;
    if (knocked(fd)) {
      rows.push_back({"out", std::move(probe), "the canary on the host received it"});
    } else {
      rows.push_back({"refused:network namespace", std::move(probe), "nothing reached the canary"});
    }
  };
  host_row("UDP to the host's 127.0.0.1 (canary)", s.udp4);
  host_row("UDP to the host's ::1 (canary)", s.udp6);
  for (auto [fd, name] : {std::pair<int, const char*>{s.tcp4, "TCP 127.0.0.1"},
                          {s.tcp6, "TCP ::1"},
                          {s.abstract_unix, "abstract Unix"}}) {
    if (knocked(fd)) rows.push_back({"out", str_cat(name, " canary on the host"), "connected"});
  }
  for (std::size_t i = 0; i < s.path_unix.size(); ++i) {
    if (knocked(s.path_unix[i]))
      rows.push_back({"out", str_cat(s.path_sockets[i], " on the host"), "connected"});
  }
  for (const auto& dir : s.canary_dirs) {
    if (::access((dir + "/written-from-the-jail").c_str(), F_OK) == 0)
      rows.push_back(
          {"out", str_cat(dir, " on the host"), "a file written from the jail is there"});
  }
  s.close_all();

  std::size_t width = 5;
  for (const auto& r : rows)
    width = std::max(width, r.probe.size());
  std::string out =
      str_cat("airlock run --self-test: ", rows.size(), " probes from inside the jail\n\n");
  auto pad = [](std::string t, std::size_t w) {
    if (t.size() < w) t.append(w - t.size(), ' ');
    return t;
  };
  out += str_cat(pad("PROBE", width), "  ", pad("RESULT", 8), "  BY / DETAIL\n");
  std::vector<std::string> holes;
  for (const auto& r : rows) {
    std::string result = "info", by = r.detail;
    if (r.verdict == "out") {
      result = "GOT OUT";
      holes.push_back(r.probe);
    } else if (r.verdict.starts_with("refused:")) {
      result = "refused";
      by = str_cat(r.verdict.substr(8), " (", r.detail, ')');
    }
    out += str_cat(pad(r.probe, width), "  ", pad(result, 8), "  ", by, '\n');
  }
  if (jail_code != 0 || rows.empty()) {
    out += str_cat("\nthe probes did not finish (status ", jail_code, ")\n");
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    return 125;
  }
  if (holes.empty()) {
    out += "\nnothing got out\n";
  } else {
    out += str_cat("\nGOT OUT (", holes.size(), "):\n");
    for (const auto& h : holes)
      out += str_cat("  ", h, '\n');
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return holes.empty() ? 0 : 1;
}

}  // namespace airlock::launcher
