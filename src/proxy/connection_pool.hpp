#pragma once
// Idle upstream connections for plain HTTP, kept per worker thread so that taking and
// returning one needs no lock (each worker runs its own io_context on one thread).
//
// Thread safety: none; use only from the owning worker's thread.

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace airlock::proxy {

class connection_pool {
 public:
  struct options {
    // As many as the clients that use one origin at once, or every exchange past the cap
    // closes its upstream connection and the next one connects again (at 256 client
    // connections to one origin, 32 made 60% of requests pay a TCP connect and close).
    std::size_t max_per_key = 512;
    std::size_t max_total = 1024;
    std::chrono::milliseconds max_idle{15'000};
  };
  connection_pool() : connection_pool(options{}) {}
  explicit connection_pool(options o) : options_(o) {}

  // A live idle connection for key (host:port), or nullopt. Connections that were closed by
  // the peer, sent unexpected bytes, or idled too long are dropped on the way. `peer`, when
  // given, is set to the address put() was told (unspecified if it was not).
  std::optional<boost::asio::ip::tcp::socket> take(const std::string& key,
                                                   boost::asio::ip::tcp::endpoint* peer = nullptr);
  // `peer`: the address the connection goes to, kept so that take() need not ask the kernel
  // again (a getpeername per request).
  void put(const std::string& key, boost::asio::ip::tcp::socket socket,
           const boost::asio::ip::tcp::endpoint& peer = {});
  void clear();
  std::size_t size() const noexcept { return total_; }

 private:
  struct entry {
    boost::asio::ip::tcp::socket socket;
    std::chrono::steady_clock::time_point since;
    boost::asio::ip::tcp::endpoint peer;
  };
  void evict_expired(std::chrono::steady_clock::time_point now);
  options options_;
  std::unordered_map<std::string, std::vector<entry>> idle_;
  std::size_t total_ = 0;
  std::chrono::steady_clock::time_point last_sweep_{};
};

}  // namespace airlock::proxy
