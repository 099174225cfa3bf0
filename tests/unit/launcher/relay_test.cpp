#include "launcher/relay.hpp"

#include "net/proxy_protocol.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace airlock::launcher {
namespace proxy_v2 = net::proxy_v2;
namespace {

// A listening socket on 127.0.0.1 with an ephemeral port.
int listen_any(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return -1;
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{10, 0};  // no test may hang
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Upstream that, per connection, reads until EOF, then sends back what it read (reversed
// order of nothing: the same bytes) and closes. Records what each connection sent.
class echo_upstream {
 public:
  explicit echo_upstream(int connections) {
    fd_ = listen_any(port_);
    thread_ = std::thread([this, connections] {
      std::vector<std::thread> workers;
      for (int i = 0; i < connections; ++i) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        workers.emplace_back([this, c] {
          timeval tv{10, 0};
          ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
          std::string got = read_all(c);
          write_all(c, got);
          {
            // Recorded before the close, which is what ends the client's read.
            std::lock_guard lock(mu_);
            received_.push_back(got);
          }
          ::close(c);
        });
      }
      for (auto& w : workers)
        w.join();
    });
  }
  ~echo_upstream() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  std::vector<std::string> received() {
    std::lock_guard lock(mu_);
    return received_;
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> received_;
};

relay::config config_for(std::uint16_t upstream_port) {
  relay::config cfg;
  cfg.upstream = *parse_host_port("127.0.0.1:" + std::to_string(upstream_port));
  return cfg;
}

TEST(LauncherRelay, CarriesBothDirectionsWithHalfClose) {
  echo_upstream up(1);
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  ASSERT_GE(lfd, 0);
  relay r(lfd, config_for(up.port()));
  ASSERT_TRUE(r.start());

  // 3 MiB: many times the relay's 64 KiB buffers, so back pressure is exercised.
  std::string payload(3 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i * 7 + i / 251);
  const int c = connect_to(relay_port);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(write_all(c, payload));
  ::shutdown(c, SHUT_WR);  // the upstream answers only after our EOF reaches it
  const std::string back = read_all(c);
  ::close(c);
  EXPECT_EQ(back.size(), payload.size());
  EXPECT_TRUE(back == payload);
  r.stop();
  auto s = r.get_stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.bytes_up, payload.size());
  EXPECT_EQ(s.bytes_down, payload.size());
}

TEST(LauncherRelay, ProxyProtocolHeaderComesFirstAndCannotBeForged) {
  echo_upstream up(1);
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  auto cfg = config_for(up.port());
  cfg.agent = "coder";
  relay r(lfd, cfg);
  ASSERT_TRUE(r.start());

  const int c = connect_to(relay_port);
  ASSERT_GE(c, 0);
  sockaddr_in mine{};
  socklen_t len = sizeof mine;
  ::getsockname(c, reinterpret_cast<sockaddr*>(&mine), &len);
  // The agent tries to claim another identity with a header of its own.
  auto forged = *proxy_v2::encode_agent({}, {}, "admin");
  std::string data(forged.begin(), forged.end());
  data += "GET / HTTP/1.1\r\n\r\n";
  ASSERT_TRUE(write_all(c, data));
  ::shutdown(c, SHUT_WR);
  read_all(c);
  ::close(c);
  r.stop();

  auto got = up.received();
  ASSERT_EQ(got.size(), 1u);
  const auto& bytes = got[0];
  auto d = proxy_v2::decode(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(d);
  EXPECT_EQ(proxy_v2::agent_of(d->value), "coder");
  ASSERT_TRUE(d->value.source);
  EXPECT_EQ(d->value.source->port, ntohs(mine.sin_port));
  EXPECT_EQ(d->value.destination->port, relay_port);
  // What follows is the agent's bytes, verbatim: its forged header is just data.
  EXPECT_EQ(bytes.substr(d->consumed), data);
}

TEST(LauncherRelay, UnreachableProxyClosesTheConnection) {
  std::uint16_t dead_port = 0;
  const int dead = listen_any(dead_port);
  ::close(dead);  // nothing listens there now
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  relay r(lfd, config_for(dead_port));
  ASSERT_TRUE(r.start());
  const int c = connect_to(relay_port);
  ASSERT_GE(c, 0);
  write_all(c, "hello");
  EXPECT_EQ(read_all(c), "");  // EOF or reset, promptly (SO_RCVTIMEO bounds a hang)
  ::close(c);
  r.stop();
  EXPECT_EQ(r.get_stats().upstream_failures, 1u);
}

TEST(LauncherRelay, ManyConcurrentConnectionsAndLimit) {
  constexpr int n = 24;
  echo_upstream up(n);
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  relay r(lfd, config_for(up.port()));
  ASSERT_TRUE(r.start());
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < n; ++i) {
    clients.emplace_back([&, i] {
      const int c = connect_to(relay_port);
      if (c < 0) return;
      const std::string msg = "client-" + std::to_string(i) + std::string(10000 * i, 'x');
      write_all(c, msg);
      ::shutdown(c, SHUT_WR);
      if (read_all(c) == msg) ok++;
      ::close(c);
    });
  }
  for (auto& t : clients)
    t.join();
  EXPECT_EQ(ok.load(), n);
  r.stop();

  // Over the limit, connections are closed at once.
  std::uint16_t port2 = 0;
  const int lfd2 = listen_any(port2);
  auto cfg = config_for(up.port());
  cfg.max_connections = 0;
  relay limited(lfd2, cfg);
  ASSERT_TRUE(limited.start());
  const int c = connect_to(port2);
  ASSERT_GE(c, 0);
  EXPECT_EQ(read_all(c), "");
  ::close(c);
  limited.stop();
  EXPECT_EQ(limited.get_stats().refused, 1u);
}

TEST(LauncherRelay, StopClosesOpenConnections) {
  std::uint16_t up_port = 0;
  const int up = listen_any(up_port);  // accepts (backlog) but never answers
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  relay r(lfd, config_for(up_port));
  ASSERT_TRUE(r.start());
  const int c = connect_to(relay_port);
  ASSERT_GE(c, 0);
  write_all(c, "waiting");
  r.stop();
  EXPECT_EQ(read_all(c), "");
  ::close(c);
  ::close(up);
  // The listener is closed too: nobody accepts any more.
  EXPECT_LT(connect_to(relay_port), 0);
}

// A program in the jail whose executable is a sparse TiB (a copy of bash: it runs, and the
// ELF loader reads only its head) connects to the relay; with no size cap the identity lookup
// would read it all. stop() must not wait for that.
TEST(LauncherRelay, StopDoesNotWaitForAnIdentityHash) {
  char dir[] = "/tmp/airlock-relay-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string exe = std::string(dir) + "/bash";
  {
    std::ifstream in("/bin/bash", std::ios::binary);
    std::ofstream out(exe, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_EQ(::chmod(exe.c_str(), 0755), 0);
  ASSERT_EQ(::truncate(exe.c_str(), off_t{1} << 40), 0);

  std::uint16_t up_port = 0;
  const int up = listen_any(up_port);  // accepts (backlog) but never answers
  std::uint16_t relay_port = 0;
  const int lfd = listen_any(relay_port);
  auto cfg = config_for(up_port);
  cfg.agent = "coder";
  cfg.identity_init = ::getpid();  // this test plays the jail's init
  cfg.identity_limits = {std::uint64_t{1} << 50, std::chrono::hours(1)};  // only stop() ends it
  relay r(lfd, cfg);
  ASSERT_TRUE(r.start());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string script =
        "exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(relay_port) + " && read -t 30 -u 3 line";
    ::execl(exe.c_str(), "bash", "-c", script.c_str(), nullptr);
    ::_exit(97);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (r.get_stats().accepted == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(r.get_stats().accepted, 1u);
  auto stopped = std::async(std::launch::async, [&r] { r.stop(); });
  const bool in_time = stopped.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::unlink(exe.c_str());
  ::rmdir(dir);
  ::close(up);
  if (!in_time) {
    // The relay's thread is still hashing and would hold the test's exit for hours.
    std::fprintf(stderr, "relay::stop() waited on an identity hash for over 10 s\n");
    std::_Exit(1);
  }
  EXPECT_EQ(r.get_stats().unidentified, 1u);
}

}  // namespace
}  // namespace airlock::launcher
