#pragma once
// The relay: accepts connections on the jail's 127.0.0.1 listener and carries each to the
// proxy, from the launcher's own network namespace. The listener lives in the jail's network
// namespace (it was made there and passed out), the upstream sockets in the host's; that is
// the whole trick that makes the proxy the only way out.
//
// With an agent name configured, the relay writes a PROXY protocol v2 header carrying it
// (proxy_protocol.hpp) before any byte from the agent, so the proxy learns the identity from
// the launcher; whatever the agent sends comes after it and cannot replace it.
//
// One thread runs a poll(2) loop over all connections with bounded buffers per direction
// (back pressure: a side is not read while its buffer towards the other side is full);
// half-closes are passed on with shutdown(SHUT_WR).
//
// Thread safety: start() and stop() from one thread; stats() from any.

#include "launcher/address.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace airlock::launcher {

class relay {
 public:
  struct config {
    socket_address upstream;
    std::optional<std::string> agent;  // set: PROXY v2 header with the agent TLV first
    std::size_t max_connections = 512;
    std::size_t buffer_bytes = 64 * 1024;
  };

  struct stats {
    std::uint64_t accepted = 0;
    std::uint64_t upstream_failures = 0;  // connect to the proxy failed
    std::uint64_t refused = 0;            // over max_connections
    std::uint64_t bytes_up = 0;           // agent -> proxy (header included)
    std::uint64_t bytes_down = 0;         // proxy -> agent
  };

  // Takes ownership of listen_fd (a listening TCP socket).
  relay(int listen_fd, config cfg);
  relay(const relay&) = delete;
  relay& operator=(const relay&) = delete;
  ~relay();

  // Starts the loop thread. False (with the failure recorded) if it cannot.
  bool start();
  // Stops the loop, closes every connection and the listener. Idempotent.
  void stop();

  stats get_stats() const noexcept;

 private:
  void loop();

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop() writes, the loop wakes
  config cfg_;
  std::thread thread_;
  std::atomic<std::uint64_t> accepted_{0}, upstream_failures_{0}, refused_{0}, bytes_up_{0},
      bytes_down_{0};
};

}  // namespace airlock::launcher
