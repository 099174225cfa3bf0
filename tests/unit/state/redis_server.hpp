#pragma once
// A redis-server (Debian's package) for one test, on 127.0.0.1 and a port picked by binding a
// socket to port 0 first (redis itself cannot be told "any free port"). Persistence is off.
// Stopped (SIGTERM, then waited for) by stop() or the destructor, or when the test binary dies;
// start() again reuses the port.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace airlock::state::test {

inline std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool can_connect(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

class redis_server {
 public:
  // `tls_port`: the port serves TLS only (--port 0 --tls-port); `extra` then names the files.
  // `port`: one picked by the test (e.g. where a client already tries to connect); 0: a free one.
  explicit redis_server(std::vector<std::string> extra = {}, bool tls_port = false,
                        std::uint16_t port = 0)
      : extra_(std::move(extra)), tls_port_(tls_port) {
    // hiredis writes with write(2): a server gone mid-write is EPIPE, not a signal, only when
    // SIGPIPE is ignored (airlock's main() ignores it too).
    ::signal(SIGPIPE, SIG_IGN);
    port_ = port != 0 ? port : free_port();
    start();
  }
  ~redis_server() { stop(); }

  std::uint16_t port() const { return port_; }

  void start() {
    std::vector<std::string> args{"redis-server", "--bind", "127.0.0.1",  "--save", "",
                                  "--appendonly", "no",     "--loglevel", "warning"};
    if (tls_port_)
      args.insert(args.end(), {"--port", "0", "--tls-port", std::to_string(port_)});
    else
      args.insert(args.end(), {"--port", std::to_string(port_)});
    args.insert(args.end(), extra_.begin(), extra_.end());
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // A test binary that aborts (a failed ASSERT in a fixture, a sanitizer report) never runs
      // stop(): the server goes with it instead of holding its port (prctl(2); the check
      // covers a parent that died before the call).
      if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(126);
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    // Bounded: 10 s for the server to listen.
    for (int i = 0; i < 1000 && !can_connect(port_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(can_connect(port_)) << "redis-server did not start on " << port_;
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::vector<std::string> extra_;
  bool tls_port_ = false;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace airlock::state::test
