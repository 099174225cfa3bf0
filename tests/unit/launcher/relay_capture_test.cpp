#include "launcher/relay.hpp"

#include "net/proxy_protocol.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// The relay's capture path without namespaces: the "capture listener" is an ordinary loopback
// listener, and the original destination (SO_ORIGINAL_DST in the jail) is injected.

namespace airlock::launcher {
namespace proxy_v2 = net::proxy_v2;
namespace {

int listen_tcp(std::uint16_t& port) {
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

int bind_udp(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

int connect_tcp(std::uint16_t port) {
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

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until EOF or error; error_out tells a reset from an orderly end.
std::string read_all(int fd, int* error_out = nullptr) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && error_out) *error_out = errno;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Reads an HTTP head from fd (after a PROXY v2 header, if one comes first: its signature
// starts with CRLF CRLF too); returns everything read.
std::string read_head(int fd) {
  std::string out(proxy_v2::header_size, '\0');
  if (::recv(fd, out.data(), out.size(), MSG_WAITALL) != static_cast<ssize_t>(out.size()))
    return "";
  std::size_t start = 0;
  if (std::equal(proxy_v2::signature.begin(), proxy_v2::signature.end(), out.begin())) {
    const std::size_t len =
        (static_cast<std::uint8_t>(out[14]) << 8) | static_cast<std::uint8_t>(out[15]);
    std::string rest(len, '\0');
    if (len > 0 && ::recv(fd, rest.data(), len, MSG_WAITALL) != static_cast<ssize_t>(len))
      return "";
    out += rest;
    start = out.size();
  }
  char c;
  while (out.find("\r\n\r\n", start) == std::string::npos && ::recv(fd, &c, 1, 0) == 1)
    out.push_back(c);
  return out;
}

// A fake proxy: each connection is handed to `script` on its own thread; what the script
// returns is recorded as what the connection brought.
class fake_proxy {
 public:
  using script = std::function<std::string(int fd)>;
  explicit fake_proxy(script s) : script_(std::move(s)) {
    fd_ = listen_tcp(port_);
    thread_ = std::thread([this] {
      std::vector<std::thread> workers;
      while (true) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        timeval tv{10, 0};
        ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        workers.emplace_back([this, c] {
          std::string got = script_(c);
          {
            // Recorded before the close, which is what the client (through the relay) sees.
            std::lock_guard lock(mu_);
            received_.push_back(std::move(got));
          }
          ::close(c);
        });
      }
      for (auto& w : workers)
        w.join();
    });
  }
  ~fake_proxy() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  // What the connections brought, once at least `at_least` of them have finished (a
  // connection's script may still be running when the client has seen all it will see).
  std::vector<std::string> received(std::size_t at_least = 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      {
        std::lock_guard lock(mu_);
        if (received_.size() >= at_least || std::chrono::steady_clock::now() > deadline)
          return received_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  script script_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> received_;
};

// Skips the PROXY v2 header at the start of a recorded stream; the agent it named.
std::string strip_proxy_header(std::string& bytes) {
  auto d = proxy_v2::decode(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  if (!d) return "";
  std::string agent = proxy_v2::agent_of(d->value).value_or("");
  bytes.erase(0, d->consumed);
  return agent;
}

sockaddr_storage v4(const char* ip, std::uint16_t port) {
  sockaddr_storage ss{};
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a->sin_addr);
  return ss;
}

// One relay with a resolver socket and a capture listener whose every connection claims to
// have been going to *destination.
struct capture_rig {
  explicit capture_rig(std::uint16_t proxy_port, std::optional<std::string> agent = "coder") {
    std::uint16_t relay_port = 0;
    const int lfd = listen_tcp(relay_port);
    relay::config cfg;
    cfg.upstream = *parse_host_port("127.0.0.1:" + std::to_string(proxy_port));
    cfg.agent = std::move(agent);
    cfg.capture_v4 = listen_tcp(capture_port);
    cfg.dns = bind_udp(dns_port);
    cfg.original_destination = [this](int) -> std::optional<sockaddr_storage> {
      std::lock_guard lock(mu);
      return destination;
    };
    r = std::make_unique<relay>(lfd, cfg);
  }

  // Asks the relay's resolver for name's A record; the address as text.
  std::string resolve(const std::string& name) {
    std::vector<std::uint8_t> q = {0x42, 0x42, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    std::size_t start = 0;
    while (start <= name.size()) {
      auto dot = name.find('.', start);
      if (dot == std::string::npos) dot = name.size();
      q.push_back(static_cast<std::uint8_t>(dot - start));
      q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start),
               name.begin() + static_cast<std::ptrdiff_t>(dot));
      start = dot + 1;
    }
    q.insert(q.end(), {0, 0, 1, 0, 1});
    const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    timeval tv{1, 0};
    ::setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(dns_port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::uint8_t reply[512];
    ssize_t n = -1;
    // UDP: a query may be dropped (a full socket buffer); stub resolvers ask again.
    for (int attempt = 0; attempt < 5 && n < 0; ++attempt) {
      ::sendto(u, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      n = ::recv(u, reply, sizeof reply, 0);
    }
    ::close(u);
    if (n < 16) return "";
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, reply + n - 4, text, sizeof text);
    return text;
  }

  void going_to(std::optional<sockaddr_storage> d) {
    std::lock_guard lock(mu);
    destination = d;
  }

  std::uint16_t capture_port = 0, dns_port = 0;
  std::mutex mu;
  std::optional<sockaddr_storage> destination;
  std::unique_ptr<relay> r;
};

// The proxy's side of an accepted CONNECT: answer 200, then echo until EOF.
std::string accept_connect_and_echo(int fd) {
  std::string head = read_head(fd);
  send_all(fd, "HTTP/1.1 200 Connection established\r\n\r\n");
  std::string rest = read_all(fd);
  send_all(fd, rest);
  return head + rest;
}

TEST(LauncherRelayCapture, TlsGoesAsConnectToTheResolvedName) {
  fake_proxy proxy(accept_connect_and_echo);
  capture_rig rig(proxy.port());
  ASSERT_TRUE(rig.r->start());
  const std::string ip = rig.resolve("Allowed.Test");
  ASSERT_EQ(ip, "198.18.0.1");
  rig.going_to(v4(ip.c_str(), 8443));

  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  const std::string hello("\x16\x03\x01\x00\x05hello", 10);
  ASSERT_TRUE(send_all(c, hello));
  ::shutdown(c, SHUT_WR);
  EXPECT_EQ(read_all(c), hello);  // the proxy's 200 is not the client's business
  ::close(c);
  rig.r->stop();

  auto got = proxy.received(1);
  ASSERT_EQ(got.size(), 1u);
  std::string bytes = got[0];
  EXPECT_EQ(strip_proxy_header(bytes), "coder");
  EXPECT_EQ(bytes, "CONNECT allowed.test:8443 HTTP/1.1\r\nHost: allowed.test:8443\r\n\r\n" + hello);
  const auto s = rig.r->get_stats();
  EXPECT_EQ(s.captured, 1u);
  EXPECT_EQ(s.dns_queries, 1u);
}

TEST(LauncherRelayCapture, RefusedConnectResetsTheClient) {
  fake_proxy proxy([](int fd) {
    std::string head = read_head(fd);
    send_all(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n\r\ndenied");
    return head;
  });
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4(rig.resolve("denied.test").c_str(), 443));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(send_all(c, std::string("\x16\x03\x01", 3)));
  int err = 0;
  const std::string got = read_all(c, &err);
  EXPECT_EQ(got, "");  // not a byte of the proxy's answer
  EXPECT_EQ(err, ECONNRESET);
  ::close(c);
  rig.r->stop();
  EXPECT_EQ(rig.r->get_stats().capture_denied, 1u);
  auto rec = proxy.received(1);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_TRUE(rec[0].starts_with("CONNECT denied.test:443 HTTP/1.1\r\n")) << rec[0];
}

// A client that sends only empty lines: the relay does not keep buffering them in the hope
// of a request line (its memory is the host's, outside the jail's --memory). Past a few, the
// connection goes to the proxy as "other", which refuses it, and the client is reset.
TEST(LauncherRelayCapture, EmptyLinesAloneAreNotBufferedForEver) {
  fake_proxy proxy([](int fd) {
    std::string head = read_head(fd);
    send_all(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
    // Read on until the relay closes: closing with the client's CRLFs unread would reset the
    // relay's upstream, and it could see that reset before it reads the 403 (it then resets
    // the client all the same, but without counting a refusal).
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    while (::recv(fd, sink, sizeof sink, 0) > 0) {
    }
    return head;
  });
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4(rig.resolve("a.test").c_str(), 80));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  timeval tv{10, 0};
  ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // Whole CRLFs in every segment (small sends, no Nagle), so that no read of the relay's ends
  // half-way through one: a lone CR would be "other" at once.
  const int one = 1;
  ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string crlfs;
  for (int i = 0; i < 1024; ++i)
    crlfs += "\r\n";
  for (int i = 0; i < 256 && send_all(c, crlfs); ++i) {
    // 512 KiB in all; sending may fail part way: the relay resets the connection
  }
  read_all(c);  // ends with the reset (or at the 10 s receive timeout, before the fix)
  ::close(c);
  auto rec = proxy.received(1);
  rig.r->stop();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_TRUE(rec[0].starts_with("CONNECT a.test:80 HTTP/1.1\r\n")) << rec[0].substr(0, 80);
  EXPECT_EQ(rig.r->get_stats().capture_denied, 1u);
}

TEST(LauncherRelayCapture, PlainHttpGoesInAbsoluteForm) {
  fake_proxy proxy([](int fd) {
    std::string all;
    for (int i = 0; i < 2; ++i) {
      std::string head = read_head(fd);
      all += head;
      if (head.find("Content-Length: 4") != std::string::npos) {
        char body[4];
        if (::recv(fd, body, 4, MSG_WAITALL) == 4) all.append(body, 4);
      }
      send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
    return all;
  });
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4(rig.resolve("allowed.test").c_str(), 8080));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(send_all(c,
                       "GET /a HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n"
                       "POST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\nGET "));
  std::string answers;
  char buf[256];
  while (answers.size() < 2 * 40) {
    const ssize_t n = ::recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    answers.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(answers,
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  ::close(c);
  rig.r->stop();
  auto got = proxy.received(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0],
            "GET http://allowed.test:8080/a HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n"
            "POST http://allowed.test:8080/b HTTP/1.1\r\nContent-Length: 4\r\n\r\nGET ");
}

TEST(LauncherRelayCapture, LargeBodiesKeepTheirBytesAndTheNextHeadIsRewritten) {
  // 3 MiB of chunked body, many times the relay's buffers, then a second request: back
  // pressure on the rewriting path, and framing across every read boundary.
  std::string body(3 << 20, '\0');
  for (std::size_t i = 0; i < body.size(); ++i)
    body[i] = static_cast<char>("GET / HTTP/1.1\r\n"[i % 16]);
  std::string chunked;
  for (std::size_t at = 0; at < body.size(); at += 100000) {
    const std::size_t n = std::min<std::size_t>(100000, body.size() - at);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", n);
    chunked += size + body.substr(at, n) + "\r\n";
  }
  chunked += "0\r\n\r\n";
  const std::string request = "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked +
                              "GET /next HTTP/1.1\r\n\r\n";
  fake_proxy proxy([](int fd) { return read_all(fd); });
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4(rig.resolve("big.test").c_str(), 80));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  std::thread writer([&] {
    send_all(c, request);
    ::shutdown(c, SHUT_WR);
  });
  read_all(c);
  writer.join();
  ::close(c);
  rig.r->stop();
  auto got = proxy.received(1);
  ASSERT_EQ(got.size(), 1u);
  const std::string want =
      "POST http://big.test:80/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked +
      "GET http://big.test:80/next HTTP/1.1\r\n\r\n";
  EXPECT_EQ(got[0].size(), want.size());
  EXPECT_TRUE(got[0] == want);
}

TEST(LauncherRelayCapture, AddressesTheResolverNeverGaveOutAreReset) {
  fake_proxy proxy(accept_connect_and_echo);
  capture_rig rig(proxy.port());
  ASSERT_TRUE(rig.r->start());
  rig.resolve("a.test");
  for (auto dst : {std::optional(v4("198.18.0.99", 443)), std::optional(v4("127.0.0.1", 3128)),
                   std::optional(v4("198.18.0.0", 443)), std::optional<sockaddr_storage>()}) {
    rig.going_to(dst);
    const int c = connect_tcp(rig.capture_port);
    ASSERT_GE(c, 0);
    send_all(c, "GET / HTTP/1.1\r\n\r\n");
    int err = 0;
    EXPECT_EQ(read_all(c, &err), "");
    ::close(c);
  }
  rig.r->stop();
  EXPECT_EQ(rig.r->get_stats().capture_dropped, 4u);
  EXPECT_EQ(proxy.received().size(), 0u);  // the proxy never heard of them
}

TEST(LauncherRelayCapture, LiteralAddressesGoAsTheyAre) {
  fake_proxy proxy(accept_connect_and_echo);
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4("192.0.2.5", 22));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  // An SSH client speaks first with its banner: not TLS, not HTTP -> CONNECT, and the proxy
  // decides (a real one refuses non-TLS tunnels to names, and IP targets by policy).
  ASSERT_TRUE(send_all(c, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"));
  ::shutdown(c, SHUT_WR);
  EXPECT_EQ(read_all(c), "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
  ::close(c);
  rig.r->stop();
  auto got = proxy.received(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].starts_with("CONNECT 192.0.2.5:22 HTTP/1.1\r\n")) << got[0];
}

TEST(LauncherRelayCapture, SilentClientThatLeavesCostsNothing) {
  fake_proxy proxy([](int fd) { return read_all(fd); });
  capture_rig rig(proxy.port(), std::nullopt);
  ASSERT_TRUE(rig.r->start());
  rig.going_to(v4(rig.resolve("a.test").c_str(), 443));
  const int c = connect_tcp(rig.capture_port);
  ASSERT_GE(c, 0);
  ::shutdown(c, SHUT_WR);
  EXPECT_EQ(read_all(c), "");
  ::close(c);
  rig.r->stop();
  // The proxy connection (already open) saw nothing at all.
  for (const auto& r : proxy.received())
    EXPECT_EQ(r, "");
}

TEST(LauncherRelayCapture, ResolverFloodStaysBounded) {
  fake_proxy proxy(accept_connect_and_echo);
  capture_rig rig(proxy.port());
  ASSERT_TRUE(rig.r->start());
  // Garbage datagrams get no answer and do not stop the resolver.
  const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(rig.dns_port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 500; ++i)
    ::sendto(u, "xx", 2, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  ::close(u);
  EXPECT_EQ(rig.resolve("after.test"), "198.18.0.1");
  rig.r->stop();
}

}  // namespace
}  // namespace airlock::launcher
