#pragma once
// Idle upstream connections, kept per worker thread so that taking and returning one needs no
// lock (each worker runs its own io_context on one thread): plain TCP for http:// requests, and
// TLS streams whose handshake verified the origin for intercepted tunnels (a new tunnel to the
// same origin then skips the TCP connect and the upstream handshake).
//
// Thread safety: none; use only from the owning worker's thread.

#include "tls/socket_stream.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace airlock::proxy {

using tls_upstream = tls::socket_stream<boost::beast::tcp_stream>;

// A plain upstream connection as an exchange uses it: Beast's stream around the socket and the
// buffer its responses are read into. They wait in the pool together, behind one pointer, so
// that an exchange on a pooled connection makes neither again: a tcp_stream is a shared
// state with three timers, built (and, when moved, built again: Beast's move constructor leaves
// the source as if new) for every request when only the socket was pooled. The buffer is empty
// whenever the connection is put back (a reusable connection has nothing unread).
struct plain_upstream {
  explicit plain_upstream(const boost::asio::any_io_executor& ex) : stream(ex) {}
  boost::beast::tcp_stream stream;
  boost::beast::flat_buffer buffer;
  std::string peer_text;  // the origin's address as the audit record writes it, once per connect
};
using plain_upstream_ptr = std::unique_ptr<plain_upstream>;

template <class Connection>
class idle_pool {
 public:
  struct options {
    // As many as the clients that use one origin at once, or every exchange past the cap
    // closes its upstream connection and the next one connects again (at 256 client
    // connections to one origin, 32 made 60% of requests pay a TCP connect and close).
    std::size_t max_per_key = 512;
    std::size_t max_total = 1024;
    std::chrono::milliseconds max_idle{15'000};
  };
  idle_pool() : idle_pool(options{}) {}
  explicit idle_pool(options o) : options_(o) {}

  // A live idle connection for key, or nullopt. Connections that were closed by the peer, sent
  // unexpected bytes, idled too long, or were put by another owner than `owner` are dropped on
  // the way. `peer`, when given, is set to the address put() was told (unspecified if it was
  // not).
  std::optional<Connection> take(const std::string& key,
                                 boost::asio::ip::tcp::endpoint* peer = nullptr,
                                 const void* owner = nullptr);
  // `peer`: the address the connection goes to, kept so that take() need not ask the kernel
  // again (a getpeername per request). `owner`: what the connection was made under (for TLS,
  // the interception whose context verified the origin), held so that its address cannot be
  // reused by a later one while the connection waits here; take() hands the connection only to
  // the same owner. A closed connection is not kept.
  void put(const std::string& key, Connection connection,
           const boost::asio::ip::tcp::endpoint& peer = {},
           std::shared_ptr<const void> owner = nullptr);
  void clear();
  std::size_t size() const noexcept { return total_; }

 private:
  struct entry {
    Connection connection;
    std::chrono::steady_clock::time_point since;
    boost::asio::ip::tcp::endpoint peer;
    std::shared_ptr<const void> owner;
  };
  void evict_expired(std::chrono::steady_clock::time_point now);
  options options_;
  std::unordered_map<std::string, std::vector<entry>> idle_;
  std::size_t total_ = 0;
  std::chrono::steady_clock::time_point last_sweep_{};
};

// Plain HTTP upstream connections, keyed host:port.
using connection_pool = idle_pool<plain_upstream_ptr>;
// Verified TLS upstream connections of intercepted tunnels that spoke HTTP/1.1, keyed by
// tls_pool_key and owned by their interception.
using tls_connection_pool = idle_pool<tls_upstream>;

extern template class idle_pool<plain_upstream_ptr>;
extern template class idle_pool<tls_upstream>;

// The TLS pool's key: the name the origin's certificate was verified for (also the SNI), the
// port, and whether ALPN offered h2 (a connection made without offering it must not serve a
// rule that allows h2, nor the other way round).
std::string tls_pool_key(const std::string& host, std::uint16_t port, bool offered_h2);

}  // namespace airlock::proxy
