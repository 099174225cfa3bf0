#include "launcher/relay_worker.hpp"

#include "core/log.hpp"
#include "net/proxy_protocol.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace airlock::launcher {
namespace proxy_v2 = net::proxy_v2;
using namespace relay_io;

relay::worker::worker(relay& owner)
    : owner_(owner),
      cfg_(owner.cfg_),
      dns_(pool_, cfg_.hostname, cfg_.resolver_ipv6, cfg_.dns_allow),
      identities_(cfg_.identity_init, "/proc", cfg_.identity_limits, &owner.stopping_) {}

void relay::worker::run() {
  while (true) {
    build_poll_set();
    const int n = ::poll(fds_.data(), fds_.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      AIRLOCK_LOG(error, "launcher", "relay: poll: ", std::strerror(errno));
      break;
    }
    if (fds_[0].revents) break;  // stop()

    std::size_t i = first_connection;
    for (auto& c : conns_) {
      const short cr = fds_[i].revents, ur = fds_[i + 1].revents;
      i += 2;
      service_connection(c, cr, ur);
    }
    conns_.remove_if([](const connection& c) { return c.dead; });
    if (fds_[1].revents & POLLIN) accept_from(owner_.listen_fd_, false);
    if (fds_[2].revents & POLLIN) accept_from(cfg_.capture_v4, true);
    if (fds_[3].revents & POLLIN) accept_from(cfg_.capture_v6, true);
    if (fds_[4].revents & POLLIN) answer_dns();
  }
  for (auto& c : conns_)
    close_connection(c);
}

void relay::worker::build_poll_set() {
  fds_.clear();
  fds_.push_back({owner_.wake_fd_, POLLIN, 0});
  // Always accepted, even at the limit: over it, accept_from closes the connection at once,
  // which the agent sees as a reset rather than a hang in the backlog.
  fds_.push_back({owner_.listen_fd_, POLLIN, 0});
  fds_.push_back({cfg_.capture_v4, POLLIN, 0});  // a negative fd is skipped by poll
  fds_.push_back({cfg_.capture_v6, POLLIN, 0});
  fds_.push_back({cfg_.dns, POLLIN, 0});
  for (auto& c : conns_) {
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
    fds_.push_back({ce ? c.client : -1, ce, 0});
    fds_.push_back({ue ? c.upstream : -1, ue, 0});
  }
}

void relay::worker::service_connection(connection& c, short cr, short ur) {
  if (c.dead) return;
  if (c.connecting && ur && !finish_connect(c)) return;
  if (cr & (POLLIN | POLLHUP | POLLERR)) {
    const bool sniffing = c.ph == phase::sniff || c.ph == phase::http;
    io r = read_client(c);
    if (r == io::eof && !sniffing) c.client_eof = true;
    if (failed(c, r)) return;
  }
  if (!c.connecting && (ur & (POLLIN | POLLHUP | POLLERR)) && !c.upstream_eof) {
    io r = read_upstream(c);
    if (r == io::eof) {
      c.upstream_eof = true;
      // The proxy hung up before it answered the CONNECT: nothing to pass on.
      if (c.ph == phase::awaiting_reply || c.ph == phase::sniff) {
        reset_connection(c);
        return;
      }
    }
    if (failed(c, r)) return;
  }
  if (!c.connecting && !c.up.empty() && failed(c, write_from(c.upstream, c.up))) return;
  if (!c.down.empty() && failed(c, write_from(c.client, c.down))) return;
  pass_half_closes(c);
  if (c.up_shut && c.down_shut) close_connection(c);
}

bool relay::worker::finish_connect(connection& c) {
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(c.upstream, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    warn_unreachable(err);
    owner_.upstream_failures_.fetch_add(1, std::memory_order_relaxed);
    close_connection(c);
    return false;
  }
  c.connecting = false;
  return true;
}

bool relay::worker::failed(connection& c, io r) {
  if (r == io::error && !c.dead) close_connection(c);
  return r == io::error || c.dead;
}

void relay::worker::pass_half_closes(connection& c) {
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
}

void relay::worker::accept_from(int listener, bool captured) {
  while (true) {
    sockaddr_storage peer{}, local{};
    socklen_t peer_len = sizeof peer, local_len = sizeof local;
    const int client = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;  // EAGAIN, or a connection that died in the queue
    if (conns_.size() >= cfg_.max_connections) {
      owner_.refused_.fetch_add(1, std::memory_order_relaxed);
      ::close(client);
      continue;
    }
    if (!captured) {
      // Source: the agent's end; destination: the relay's listener, as seen in the jail.
      ::getsockname(client, reinterpret_cast<sockaddr*>(&local), &local_len);
      open(client, peer, local);
      continue;
    }
    open_captured(client, peer);
  }
}

void relay::worker::open_captured(int client, const sockaddr_storage& peer) {
  owner_.captured_.fetch_add(1, std::memory_order_relaxed);
  const auto dst = cfg_.original_destination(client);
  auto target = dst ? target_of(*dst, pool_) : std::nullopt;
  if (!target) {
    owner_.capture_dropped_.fetch_add(1, std::memory_order_relaxed);
    AIRLOCK_LOG(
        debug, "launcher", "capture: reset a connection to ",
        dst ? "an address the resolver never handed out, or loopback" : "an unknown destination");
    reset_fd(client);
    return;
  }
  // Source: the command's end; destination: where it was going.
  connection* c = open(client, peer, *dst);
  if (!c) return;
  c->ph = phase::sniff;
  c->authority = std::move(*target);
}

// Opens the upstream for a new client and queues the PROXY header; nullptr (client closed)
// when the proxy cannot be reached.
relay_io::connection* relay::worker::open(int client, const sockaddr_storage& source,
                                          const sockaddr_storage& destination) {
  owner_.accepted_.fetch_add(1, std::memory_order_relaxed);
  const int up = ::socket(cfg_.upstream.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (up < 0) {
    owner_.upstream_failures_.fetch_add(1, std::memory_order_relaxed);
    ::close(client);
    return nullptr;
  }
  const int one = 1;
  if (cfg_.upstream.family() != AF_UNIX)
    ::setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(up, cfg_.upstream.get(), cfg_.upstream.length) != 0 && errno != EINPROGRESS) {
    warn_unreachable(errno);
    owner_.upstream_failures_.fetch_add(1, std::memory_order_relaxed);
    ::close(up);
    ::close(client);
    return nullptr;
  }
  auto& c = conns_.emplace_back(client, up, cfg_.buffer_bytes);
  if (cfg_.agent && !queue_proxy_header(c, source, destination)) {
    close_connection(c);
    return nullptr;
  }
  return &c;
}

// The PROXY v2 header naming the agent (and, with identity_init, the program), ahead of any
// byte from the client. False if it cannot be encoded.
bool relay::worker::queue_proxy_header(connection& c, const sockaddr_storage& source,
                                       const sockaddr_storage& destination) {
  proxy_v2::header h;
  h.source = to_endpoint(source);
  h.destination = to_endpoint(destination);
  h.tlvs.push_back({proxy_v2::tlv_agent, *cfg_.agent});
  // Looked up now, while the client is most likely still there; the client end's local
  // address is `source` and its remote `destination` (for a captured connection, where
  // it was going: the nat rule is invisible to the client's socket).
  if (cfg_.identity_init > 0) {
    std::string why;
    if (auto binary = identities_.find(source, destination, why)) {
      proxy_v2::add_binary(h, *binary);
    } else {
      owner_.unidentified_.fetch_add(1, std::memory_order_relaxed);
      AIRLOCK_LOG(debug, "launcher", "relay: no program identity: ", why);
    }
  }
  auto header = proxy_v2::encode(h);
  if (!header) return false;
  c.up.append({reinterpret_cast<const char*>(header->data()), header->size()});
  owner_.bytes_up_.fetch_add(header->size(), std::memory_order_relaxed);
  return true;
}

void relay::worker::warn_unreachable(int err) {
  if (warned_) return;
  AIRLOCK_LOG(warn, "launcher", "relay: cannot reach the proxy at ", to_string(cfg_.upstream), ": ",
              std::strerror(err));
  warned_ = true;
}

void relay::worker::answer_dns() {
  std::uint8_t buf[4096];
  for (int i = 0; i < 64; ++i) {  // bounded, so a flood cannot starve the connections
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(cfg_.dns, buf, sizeof buf, MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0) return;
    owner_.dns_queries_.fetch_add(1, std::memory_order_relaxed);
    const auto reply = dns_.answer({buf, static_cast<std::size_t>(n)});
    if (!reply.empty()) {
      ::sendto(cfg_.dns, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&from), from_len);
    }
  }
}

}  // namespace airlock::launcher
