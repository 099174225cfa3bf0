#include "launcher/relay.hpp"

#include "core/log.hpp"
#include "launcher/capture_protocol.hpp"
#include "launcher/name_pool.hpp"
#include "launcher/relay_connection.hpp"
#include "launcher/resolver.hpp"
#include "launcher/step.hpp"
#include "net/proxy_protocol.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <list>
#include <vector>

namespace airlock::launcher {
namespace proxy_v2 = net::proxy_v2;
using namespace relay_io;
namespace {

// SO_ORIGINAL_DST (linux/netfilter_ipv4.h) and IP6T_SO_ORIGINAL_DST
// (linux/netfilter_ipv6/ip6_tables.h); both 80. Spelled here because those headers drag in
// kernel definitions that clash with the C library's.
constexpr int so_original_dst = 80;
constexpr int ip6t_so_original_dst = 80;

}  // namespace

std::optional<sockaddr_storage> original_destination_of(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  sockaddr_storage out{};
  len = sizeof out;
  // The destination before the nat rule rewrote it, from conntrack (netfilter_ipv4.h).
  const int rc = local.ss_family == AF_INET6
                     ? ::getsockopt(fd, SOL_IPV6, ip6t_so_original_dst, &out, &len)
                     : ::getsockopt(fd, SOL_IP, so_original_dst, &out, &len);
  if (rc != 0) return std::nullopt;
  return out;
}

relay::relay(int listen_fd, config cfg) : listen_fd_(listen_fd), cfg_(std::move(cfg)) {
  if (!cfg_.original_destination) cfg_.original_destination = original_destination_of;
}

relay::~relay() {
  stop();
  close_listeners();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void relay::close_listeners() {
  for (int* fd : {&listen_fd_, &cfg_.capture_v4, &cfg_.capture_v6, &cfg_.dns}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

bool relay::start() {
  if (listen_fd_ < 0) return step_failed_msg("relay: no listening socket");
  for (int fd : {listen_fd_, cfg_.capture_v4, cfg_.capture_v6, cfg_.dns}) {
    if (fd < 0) continue;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
      return step_failed("fcntl(relay socket, O_NONBLOCK)");
  }
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
  stopping_.store(true, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  close_listeners();
}

relay::stats relay::get_stats() const noexcept {
  return {accepted_.load(),        upstream_failures_.load(), refused_.load(),
          bytes_up_.load(),        bytes_down_.load(),        captured_.load(),
          capture_dropped_.load(), capture_denied_.load(),    dns_queries_.load(),
          unidentified_.load()};
}

void relay::loop() {
  std::list<connection> conns;
  std::vector<pollfd> fds;
  bool warned = false;
  // The resolver and the pool belong to this thread: the resolver hands out addresses and
  // the capture maps them back, one after the other, without a lock.
  name_pool pool;
  resolver dns(pool, cfg_.hostname, cfg_.resolver_ipv6, cfg_.dns_allow);
  peer_identity identities(cfg_.identity_init, "/proc", cfg_.identity_limits, &stopping_);

  auto warn_unreachable = [&](int err) {
    if (warned) return;
    AIRLOCK_LOG(warn, "launcher", "relay: cannot reach the proxy at ", to_string(cfg_.upstream),
                ": ", std::strerror(err));
    warned = true;
  };

  // Opens the upstream for a new client and queues the PROXY header; nullptr (client closed)
  // when the proxy cannot be reached.
  auto open = [&](int client, const sockaddr_storage& source,
                  const sockaddr_storage& destination) -> connection* {
    accepted_.fetch_add(1, std::memory_order_relaxed);
    const int up = ::socket(cfg_.upstream.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (up < 0) {
      upstream_failures_.fetch_add(1, std::memory_order_relaxed);
      ::close(client);
      return nullptr;
    }
    const int one = 1;
    if (cfg_.upstream.family() != AF_UNIX)
      ::setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(up, cfg_.upstream.get(), cfg_.upstream.length) != 0 && errno != EINPROGRESS) {
      warn_unreachable(errno);
      upstream_failures_.fetch_add(1, std::memory_order_relaxed);
      ::close(up);
      ::close(client);
      return nullptr;
    }
    auto& c = conns.emplace_back(client, up, cfg_.buffer_bytes);
    if (cfg_.agent) {
      proxy_v2::header h;
      h.source = to_endpoint(source);
      h.destination = to_endpoint(destination);
      h.tlvs.push_back({proxy_v2::tlv_agent, *cfg_.agent});
      // Looked up now, while the client is most likely still there; the client end's local
      // address is `source` and its remote `destination` (for a captured connection, where
      // it was going: the nat rule is invisible to the client's socket).
      if (cfg_.identity_init > 0) {
        std::string why;
        if (auto binary = identities.find(source, destination, why)) {
          proxy_v2::add_binary(h, *binary);
        } else {
          unidentified_.fetch_add(1, std::memory_order_relaxed);
          AIRLOCK_LOG(debug, "launcher", "relay: no program identity: ", why);
        }
      }
      auto header = proxy_v2::encode(h);
      if (!header) {
        close_connection(c);
        return nullptr;
      }
      c.up.append({reinterpret_cast<const char*>(header->data()), header->size()});
      bytes_up_.fetch_add(header->size(), std::memory_order_relaxed);
    }
    return &c;
  };

  auto accept_from = [&](int listener, bool captured) {
    while (true) {
      sockaddr_storage peer{}, local{};
      socklen_t peer_len = sizeof peer, local_len = sizeof local;
      const int client = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) return;  // EAGAIN, or a connection that died in the queue
      if (conns.size() >= cfg_.max_connections) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        ::close(client);
        continue;
      }
      if (!captured) {
        // Source: the agent's end; destination: the relay's listener, as seen in the jail.
        ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &local_len);
        open(client, peer, local);
        continue;
      }
      captured_.fetch_add(1, std::memory_order_relaxed);
      const auto dst = cfg_.original_destination(client);
      auto target = dst ? target_of(*dst, pool) : std::nullopt;
      if (!target) {
        capture_dropped_.fetch_add(1, std::memory_order_relaxed);
        AIRLOCK_LOG(debug, "launcher", "capture: reset a connection to ",
                    dst ? "an address the resolver never handed out, or loopback"
                        : "an unknown destination");
        reset_fd(client);
        continue;
      }
      // Source: the command's end; destination: where it was going.
      connection* c = open(client, peer, *dst);
      if (!c) continue;
      c->ph = phase::sniff;
      c->authority = std::move(*target);
    }
  };

  // Captured: the first bytes (or the end of them) decide how the proxy gets the connection.
  auto decide = [&](connection& c) {
    const auto k = capture::classify(c.pending, c.client_eof);
    if (k == capture::kind::need_more) return;
    if (c.pending.empty()) {  // closed without a word: nothing to carry
      close_connection(c);
      return;
    }
    if (k == capture::kind::http) {
      c.rewriter.emplace(c.authority);
      std::string out;
      c.rewriter->feed(c.pending, out);
      if (c.client_eof) c.rewriter->finish(out);
      c.up.append(out);
      c.ph = phase::http;
      AIRLOCK_LOG(debug, "launcher", "capture: HTTP to ", c.authority);
    } else {
      c.up.append(capture::connect_request(c.authority));
      c.up.append(c.pending);
      c.ph = phase::awaiting_reply;
      AIRLOCK_LOG(debug, "launcher", "capture: CONNECT ", c.authority);
    }
    c.pending.clear();
  };

  auto read_client = [&](connection& c) -> io {
    if (c.ph == phase::relay || c.ph == phase::awaiting_reply)
      return classify_read(c.up.receive(c.client), bytes_up_);
    char tmp[16 * 1024];
    const std::size_t want = std::min(sizeof tmp, std::max<std::size_t>(c.up.room(), 1));
    ssize_t r;
    do {
      r = ::recv(c.client, tmp, want, 0);
    } while (r < 0 && errno == EINTR);
    const io result = classify_read(r, bytes_up_);
    if (result == io::eof) c.client_eof = true;
    if (c.ph == phase::sniff) {
      if (result == io::ok) c.pending.append(tmp, static_cast<std::size_t>(r));
      if (result == io::ok || result == io::eof) decide(c);
      // classify decides within max_sniff_bytes; should it not, the buffer (in the host's
      // memory, outside the jail's --memory) still stops here.
      if (c.ph == phase::sniff && c.pending.size() > capture::max_sniff_bytes) {
        reset_connection(c);
        return io::error;
      }
      return result;
    }
    // phase::http
    std::string out;
    if (result == io::ok) c.rewriter->feed({tmp, static_cast<std::size_t>(r)}, out);
    if (result == io::eof) c.rewriter->finish(out);
    c.up.append(out);
    return result;
  };

  auto read_upstream = [&](connection& c) -> io {
    if (c.ph != phase::awaiting_reply)
      return classify_read(c.down.receive(c.upstream), bytes_down_);
    char tmp[4096];
    ssize_t r;
    do {
      r = ::recv(c.upstream, tmp, sizeof tmp, 0);
    } while (r < 0 && errno == EINTR);
    const io result = classify_read(r, bytes_down_);
    if (result != io::ok) return result;
    c.pending.append(tmp, static_cast<std::size_t>(r));
    const auto reply = capture::parse_connect_reply(c.pending);
    if (reply.result == capture::connect_reply::state::established) {
      c.down.append(std::string_view(c.pending).substr(reply.head_size));
      c.pending.clear();
      c.ph = phase::relay;
    } else if (reply.result == capture::connect_reply::state::refused) {
      capture_denied_.fetch_add(1, std::memory_order_relaxed);
      AIRLOCK_LOG(debug, "launcher", "capture: the proxy refused CONNECT ", c.authority, ": ",
                  reply.status_line);
      reset_connection(c);
      return io::error;
    }
    return io::ok;
  };

  auto answer_dns = [&] {
    std::uint8_t buf[4096];
    for (int i = 0; i < 64; ++i) {  // bounded, so a flood cannot starve the connections
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      const ssize_t n = ::recvfrom(cfg_.dns, buf, sizeof buf, MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) return;
      dns_queries_.fetch_add(1, std::memory_order_relaxed);
      const auto reply = dns.answer({buf, static_cast<std::size_t>(n)});
      if (!reply.empty()) {
        ::sendto(cfg_.dns, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&from), from_len);
      }
    }
  };

  while (true) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    // Always accepted, even at the limit: over it, accept_from closes the connection at once,
    // which the agent sees as a reset rather than a hang in the backlog.
    fds.push_back({listen_fd_, POLLIN, 0});
    fds.push_back({cfg_.capture_v4, POLLIN, 0});  // a negative fd is skipped by poll
    fds.push_back({cfg_.capture_v6, POLLIN, 0});
    fds.push_back({cfg_.dns, POLLIN, 0});
    constexpr std::size_t first_connection = 5;
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

    std::size_t i = first_connection;
    for (auto& c : conns) {
      const short cr = fds[i].revents, ur = fds[i + 1].revents;
      i += 2;
      if (c.dead) continue;
      if (c.connecting && ur) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          warn_unreachable(err);
          upstream_failures_.fetch_add(1, std::memory_order_relaxed);
          close_connection(c);
          continue;
        }
        c.connecting = false;
      }
      auto fail = [&](io r) {
        if (r == io::error && !c.dead) close_connection(c);
        return r == io::error || c.dead;
      };
      if (cr & (POLLIN | POLLHUP | POLLERR)) {
        const bool sniffing = c.ph == phase::sniff || c.ph == phase::http;
        io r = read_client(c);
        if (r == io::eof && !sniffing) c.client_eof = true;
        if (fail(r)) continue;
      }
      if (!c.connecting && (ur & (POLLIN | POLLHUP | POLLERR)) && !c.upstream_eof) {
        io r = read_upstream(c);
        if (r == io::eof) {
          c.upstream_eof = true;
          // The proxy hung up before it answered the CONNECT: nothing to pass on.
          if (c.ph == phase::awaiting_reply || c.ph == phase::sniff) {
            reset_connection(c);
            continue;
          }
        }
        if (fail(r)) continue;
      }
      if (!c.connecting && !c.up.empty() && fail(write_from(c.upstream, c.up))) continue;
      if (!c.down.empty() && fail(write_from(c.client, c.down))) continue;
      // Pass each half-close on once its direction has drained (and, captured, once the
      // connection's first bytes have been placed).
      if (c.client_eof && c.up.empty() && !c.connecting && !c.up_shut && c.ph != phase::sniff) {
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
    if (fds[1].revents & POLLIN) accept_from(listen_fd_, false);
    if (fds[2].revents & POLLIN) accept_from(cfg_.capture_v4, true);
    if (fds[3].revents & POLLIN) accept_from(cfg_.capture_v6, true);
    if (fds[4].revents & POLLIN) answer_dns();
  }
  for (auto& c : conns)
    close_connection(c);
}

}  // namespace airlock::launcher
