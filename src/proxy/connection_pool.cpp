#include "proxy/connection_pool.hpp"

#include "core/str_cat.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace airlock::proxy {
namespace {

boost::asio::ip::tcp::socket& socket_of(plain_upstream_ptr& s) {
  return s->stream.socket();
}
boost::asio::ip::tcp::socket& socket_of(tls_upstream& s) {
  return s.socket();
}

// An idle upstream connection must have nothing to read: EOF means the server closed it, and
// data means it sent something unsolicited (we must not parse it as the next response; over
// TLS, most often a close_notify alert). Either way it is unusable.
bool still_usable(boost::asio::ip::tcp::socket& s) {
  char byte;
  ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

bool is_open(plain_upstream_ptr& s) {
  return s && s->stream.socket().is_open();
}
bool is_open(tls_upstream& s) {
  return s.socket().is_open();
}

template <class Connection>
void close_connection(Connection& c) {
  boost::system::error_code ignored;
  socket_of(c).close(ignored);
}

}  // namespace

std::string tls_pool_key(const std::string& host, std::uint16_t port, bool offered_h2) {
  return core::str_cat(host, ':', port, offered_h2 ? "+h2" : "");
}

template <class Connection>
std::optional<Connection> idle_pool<Connection>::take(const std::string& key,
                                                      boost::asio::ip::tcp::endpoint* peer,
                                                      const void* owner) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  auto& list = it->second;
  while (!list.empty()) {
    entry e = std::move(list.back());
    list.pop_back();
    --total_;
    if (now - e.since < options_.max_idle && e.owner.get() == owner &&
        still_usable(socket_of(e.connection))) {
      // An emptied list keeps its place (and capacity) for the put() that usually follows;
      // evict_expired() drops empty ones.
      if (peer) *peer = e.peer;
      return std::move(e.connection);
    }
    close_connection(e.connection);
  }
  return std::nullopt;
}

template <class Connection>
void idle_pool<Connection>::put(const std::string& key, Connection connection,
                                const boost::asio::ip::tcp::endpoint& peer,
                                std::shared_ptr<const void> owner) {
  if (!is_open(connection)) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_sweep_ > options_.max_idle) evict_expired(now);
  auto& list = idle_[key];
  if (list.size() >= options_.max_per_key || total_ >= options_.max_total) {
    close_connection(connection);
    if (list.empty()) idle_.erase(key);
    return;
  }
  list.push_back(entry{std::move(connection), now, peer, std::move(owner)});
  ++total_;
}

template <class Connection>
void idle_pool<Connection>::evict_expired(std::chrono::steady_clock::time_point now) {
  last_sweep_ = now;
  for (auto it = idle_.begin(); it != idle_.end();) {
    // Rebuilt by moving the survivors (a TLS stream can be moved but not move-assigned, which
    // erase_if would need).
    std::vector<entry> kept;
    for (auto& e : it->second) {
      if (now - e.since < options_.max_idle) {
        kept.push_back(std::move(e));
      } else {
        close_connection(e.connection);
        --total_;
      }
    }
    if (kept.empty()) {
      it = idle_.erase(it);
    } else {
      it->second.swap(kept);
      ++it;
    }
  }
}

template <class Connection>
void idle_pool<Connection>::clear() {
  for (auto& [key, list] : idle_)
    for (auto& e : list)
      close_connection(e.connection);
  idle_.clear();
  total_ = 0;
}

template class idle_pool<plain_upstream_ptr>;
template class idle_pool<tls_upstream>;

}  // namespace airlock::proxy
