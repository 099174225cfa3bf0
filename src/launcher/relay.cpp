#include "launcher/relay.hpp"

#include "core/log.hpp"
#include "launcher/proxy_protocol.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <vector>

namespace airlock::launcher {
namespace {

// Bytes waiting to go from one side to the other.
class buffer {
 public:
  explicit buffer(std::size_t capacity) : data_(capacity) {}
  bool empty() const noexcept { return begin_ == end_; }
  bool has_space() const noexcept { return end_ < data_.size() || begin_ > 0; }
  // Contiguous free space at the end (compacting first if needed).
  std::pair<char*, std::size_t> space() {
    if (end_ == data_.size() && begin_ > 0) {
      std::memmove(data_.data(), data_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    return {data_.data() + end_, data_.size() - end_};
  }
  void produced(std::size_t n) noexcept { end_ += n; }
  std::pair<const char*, std::size_t> pending() const noexcept {
    return {data_.data() + begin_, end_ - begin_};
  }
  void consumed(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  bool append(const std::vector<std::uint8_t>& bytes) {
    auto [p, n] = space();
    if (n < bytes.size()) return false;
    std::memcpy(p, bytes.data(), bytes.size());
    produced(bytes.size());
    return true;
  }

 private:
  std::vector<char> data_;
  std::size_t begin_ = 0, end_ = 0;
};

struct connection {
  connection(int c, int u, std::size_t cap) : client(c), upstream(u), up(cap), down(cap) {}
  int client;
  int upstream;
  bool connecting = true;
  buffer up;    // client -> upstream
  buffer down;  // upstream -> client
  bool client_eof = false, upstream_eof = false;
  bool up_shut = false, down_shut = false;
  bool dead = false;
};

proxy_v2::endpoint to_endpoint(const sockaddr_storage& ss) {
  proxy_v2::endpoint e;
  if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    e.v6 = true;
    std::memcpy(e.addr.data(), &v6->sin6_addr, 16);
    e.port = ntohs(v6->sin6_port);
  } else {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    std::memcpy(e.addr.data(), &v4->sin_addr, 4);
    e.port = ntohs(v4->sin_port);
  }
  return e;
}

enum class io { ok, again, eof, error };

// Reads what fits into b from fd.
io read_into(int fd, buffer& b, std::atomic<std::uint64_t>& counter) {
  auto [p, n] = b.space();
  if (n == 0) return io::again;
  ssize_t r;
  do {
    r = ::recv(fd, p, n, 0);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return io::eof;
  if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? io::again : io::error;
  b.produced(static_cast<std::size_t>(r));
  counter.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
  return io::ok;
}

io write_from(int fd, buffer& b) {
  auto [p, n] = b.pending();
  if (n == 0) return io::ok;
  ssize_t w;
  do {
    w = ::send(fd, p, n, MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? io::again : io::error;
  b.consumed(static_cast<std::size_t>(w));
  return io::ok;
}

void close_connection(connection& c) {
  if (c.client >= 0) ::close(c.client);
  if (c.upstream >= 0) ::close(c.upstream);
  c.client = c.upstream = -1;
  c.dead = true;
}

}  // namespace

relay::relay(int listen_fd, config cfg) : listen_fd_(listen_fd), cfg_(std::move(cfg)) {}

relay::~relay() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool relay::start() {
  if (listen_fd_ < 0) return step_failed_msg("relay: no listening socket");
  const int flags = ::fcntl(listen_fd_, F_GETFL);
  if (flags < 0 || ::fcntl(listen_fd_, F_SETFL, flags | O_NONBLOCK) != 0)
    return step_failed("fcntl(relay listener, O_NONBLOCK)");
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return step_failed("eventfd(relay)");
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error&) {
    return step_failed_msg("relay: cannot start its thread");
  }
  return true;
}

void relay::stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

relay::stats relay::get_stats() const noexcept {
  return {accepted_.load(), upstream_failures_.load(), refused_.load(), bytes_up_.load(),
          bytes_down_.load()};
}

void relay::loop() {
  std::list<connection> conns;
  std::vector<pollfd> fds;
  bool warned = false;

  auto accept_all = [&] {
    while (true) {
      sockaddr_storage peer{}, local{};
      socklen_t peer_len = sizeof peer, local_len = sizeof local;
      const int client = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) return;  // EAGAIN, or a connection that died in the queue
      if (conns.size() >= cfg_.max_connections) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        ::close(client);
        continue;
      }
      accepted_.fetch_add(1, std::memory_order_relaxed);
      const int up =
          ::socket(cfg_.upstream.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (up < 0) {
        upstream_failures_.fetch_add(1, std::memory_order_relaxed);
        ::close(client);
        continue;
      }
      const int one = 1;
      ::setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (::connect(up, cfg_.upstream.get(), cfg_.upstream.length) != 0 && errno != EINPROGRESS) {
        if (!warned) {
          AIRLOCK_LOG(warn, "launcher", "relay: cannot reach the proxy at ",
                      to_string(cfg_.upstream), ": ", std::strerror(errno));
          warned = true;
        }
        upstream_failures_.fetch_add(1, std::memory_order_relaxed);
        ::close(up);
        ::close(client);
        continue;
      }
      auto& c = conns.emplace_back(client, up, cfg_.buffer_bytes);
      if (cfg_.agent) {
        ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &local_len);
        // Source: the agent's end; destination: the relay's listener, as seen in the jail.
        auto header = proxy_v2::encode_agent(to_endpoint(peer), to_endpoint(local), *cfg_.agent);
        if (!header || !c.up.append(*header)) {
          close_connection(c);
          continue;
        }
        bytes_up_.fetch_add(header->size(), std::memory_order_relaxed);
      }
    }
  };

  while (true) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    // Always accepted, even at the limit: over it, accept_all closes the connection at once,
    // which the agent sees as a reset rather than a hang in the backlog.
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& c : conns) {
      short ce = 0, ue = 0;
      if (!c.client_eof && c.up.has_space()) ce |= POLLIN;
      if (!c.down.empty()) ce |= POLLOUT;
      if (c.connecting) {
        ue = POLLOUT;
      } else {
        if (!c.upstream_eof && c.down.has_space()) ue |= POLLIN;
        if (!c.up.empty()) ue |= POLLOUT;
      }
      // A negative fd is skipped by poll, so a side we are not waiting on cannot make poll
      // return (and spin) with POLLHUP while its buffer drains.
      fds.push_back({ce ? c.client : -1, ce, 0});
      fds.push_back({ue ? c.upstream : -1, ue, 0});
    }
    const int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      AIRLOCK_LOG(error, "launcher", "relay: poll: ", std::strerror(errno));
      break;
    }
    if (fds[0].revents) break;  // stop()

    std::size_t i = 2;
    for (auto& c : conns) {
      const short cr = fds[i].revents, ur = fds[i + 1].revents;
      i += 2;
      if (c.connecting && ur) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          if (!warned) {
            AIRLOCK_LOG(warn, "launcher", "relay: cannot reach the proxy at ",
                        to_string(cfg_.upstream), ": ", std::strerror(err));
            warned = true;
          }
          upstream_failures_.fetch_add(1, std::memory_order_relaxed);
          close_connection(c);
          continue;
        }
        c.connecting = false;
      }
      auto fail = [&](io r) {
        if (r == io::error) close_connection(c);
        return r == io::error;
      };
      if (cr & (POLLIN | POLLHUP | POLLERR)) {
        io r = read_into(c.client, c.up, bytes_up_);
        if (r == io::eof) c.client_eof = true;
        if (fail(r)) continue;
      }
      if (!c.connecting && (ur & (POLLIN | POLLHUP | POLLERR)) && !c.upstream_eof) {
        io r = read_into(c.upstream, c.down, bytes_down_);
        if (r == io::eof) c.upstream_eof = true;
        if (fail(r)) continue;
      }
      if (!c.connecting && !c.up.empty() && fail(write_from(c.upstream, c.up))) continue;
      if (!c.down.empty() && fail(write_from(c.client, c.down))) continue;
      // Pass each half-close on once its direction has drained.
      if (c.client_eof && c.up.empty() && !c.connecting && !c.up_shut) {
        ::shutdown(c.upstream, SHUT_WR);
        c.up_shut = true;
      }
      if (c.upstream_eof && c.down.empty() && !c.down_shut) {
        ::shutdown(c.client, SHUT_WR);
        c.down_shut = true;
      }
      if (c.up_shut && c.down_shut) close_connection(c);
    }
    conns.remove_if([](const connection& c) { return c.dead; });
    if (fds[1].revents & POLLIN) accept_all();
  }
  for (auto& c : conns)
    close_connection(c);
}

}  // namespace airlock::launcher
