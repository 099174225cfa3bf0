#pragma once
// Idle upstream connections, kept per worker thread so that taking and returning one needs no
// lock (each worker runs its own io_context on one thread): plain TCP for http:// requests, and
// TLS streams whose handshake verified the origin for intercepted tunnels (a new tunnel to the
// same origin then skips the TCP connect and the upstream handshake).
//
// Thread safety: none; use only from the owning worker's thread.

#include "tls/socket_stream.hpp"

#include <boost/asio/ip/tcp.hpp>
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
using connection_pool = idle_pool<boost::asio::ip::tcp::socket>;
// Verified TLS upstream connections of intercepted tunnels that spoke HTTP/1.1, keyed by
// tls_pool_key and owned by their interception.
using tls_connection_pool = idle_pool<tls_upstream>;

extern template class idle_pool<boost::asio::ip::tcp::socket>;
extern template class idle_pool<tls_upstream>;

// The TLS pool's key: the name the origin's certificate was verified for (also the SNI), the
// port, and whether ALPN offered h2 (a connection made without offering it must not serve a
// rule that allows h2, nor the other way round).
std::string tls_pool_key(const std::string& host, std::uint16_t port, bool offered_h2);

}  // namespace airlock::proxy
