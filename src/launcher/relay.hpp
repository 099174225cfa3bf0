#pragma once
// The relay: accepts connections on the jail's 127.0.0.1 listener and carries each to the
// proxy, from the launcher's own network namespace. The listener lives in the jail's network
// namespace (it was made there and passed out), the upstream sockets in the host's; that is
// the whole trick that makes the proxy the only way out.
//
// With an agent name configured, the relay writes a PROXY protocol v2 header carrying it
// (proxy_protocol.hpp) before any byte from the agent, so the proxy learns the identity from
// the launcher; whatever the agent sends comes after it and cannot replace it.
// With identity_init set, the header also names the program inside the jail that opened the
// connection (peer_identity.hpp; TLVs 0xE1..0xE3), looked up on the loop thread as the
// connection is accepted (a first connection from a large executable pays for its hash once;
// the hash is bounded in size and time, and stop() abandons one under way).
//
// With transparent capture (capture_net.hpp), the relay also owns the jail's resolver socket
// (resolver.hpp, answered from a name_pool) and the capture listeners, which receive every
// TCP connection the command makes to any other address. Each captured connection goes to
// the proxy as well, presented as if it had been proxied (capture_protocol.hpp): the
// destination's name comes from the pool, so the policy sees `allowed.test:443`, not an
// address. A connection to a pool address that was never handed out is reset.
//
// One thread runs a poll(2) loop over all of it with bounded buffers per direction (back
// pressure: a side is not read while its buffer towards the other side is full); half-closes
// are passed on with shutdown(SHUT_WR).
//
// Thread safety: start() and stop() from one thread; get_stats() from any.

#include "launcher/address.hpp"
#include "launcher/peer_identity.hpp"

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace airlock::launcher {

class relay {
 public:
  struct config {
    socket_address upstream;
    std::optional<std::string> agent;  // set: PROXY v2 header with the agent TLV first
    // With an agent: the jail's init (host PID). Each connection's program is looked up
    // (peer_identity.hpp) and sent in the binary TLVs; -1: no lookup, no binary TLVs.
    pid_t identity_init = -1;
    peer_identity::hash_limits identity_limits;  // tests lower or raise them
    std::size_t max_connections = 512;
    std::size_t buffer_bytes = 64 * 1024;

    // Transparent capture: listening TCP sockets that the jail's nat rule redirects to, and
    // the resolver's UDP socket. -1: none. The relay owns (and closes) them.
    int capture_v4 = -1;
    int capture_v6 = -1;
    int dns = -1;
    std::string hostname = "airlock";    // the jail's, answered as loopback
    bool resolver_ipv6 = false;          // AAAA answers from the pool (IPv6 is captured too)
    std::vector<std::string> dns_allow;  // data-like names the resolver answers anyway
    // Where a captured connection was going; SO_ORIGINAL_DST unless a test replaces it.
    std::function<std::optional<sockaddr_storage>(int fd)> original_destination;
  };

  struct stats {
    std::uint64_t accepted = 0;           // every connection, captured ones included
    std::uint64_t upstream_failures = 0;  // connect to the proxy failed
    std::uint64_t refused = 0;            // over max_connections
    std::uint64_t bytes_up = 0;           // agent -> proxy (header included)
    std::uint64_t bytes_down = 0;         // proxy -> agent
    std::uint64_t captured = 0;           // connections taken by the capture listeners
    std::uint64_t capture_dropped = 0;    // reset: unknown pool address, or loopback
    std::uint64_t capture_denied = 0;     // reset: the proxy refused the CONNECT
    std::uint64_t dns_queries = 0;
    std::uint64_t unidentified = 0;  // identity looked up and not found (no binary TLVs)
  };

  // Takes ownership of listen_fd (a listening TCP socket) and of cfg's descriptors.
  relay(int listen_fd, config cfg);
  relay(const relay&) = delete;
  relay& operator=(const relay&) = delete;
  ~relay();

  // Starts the loop thread. False (with the failure recorded) if it cannot.
  bool start();
  // Stops the loop, closes every connection and the listeners. Idempotent.
  void stop();

  stats get_stats() const noexcept;

 private:
  class worker;  // the loop thread's state and steps (relay_worker.hpp)
  void loop();
  void close_listeners();

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop() writes, the loop wakes
  config cfg_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};  // set by stop(): a hash under way is abandoned
  std::atomic<std::uint64_t> accepted_{0}, upstream_failures_{0}, refused_{0}, bytes_up_{0},
      bytes_down_{0}, captured_{0}, capture_dropped_{0}, capture_denied_{0}, dns_queries_{0},
      unidentified_{0};
};

// SO_ORIGINAL_DST (IPv4) or IP6T_SO_ORIGINAL_DST (IPv6) of an accepted, redirected socket.
std::optional<sockaddr_storage> original_destination_of(int fd);

}  // namespace airlock::launcher
