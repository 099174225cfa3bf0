#pragma once
// The upstream connections one client connection opens at a time, counted against the caps on
// client connections (client_limiter.hpp). An HTTP/1.1 client connection carries one exchange at
// a time, so it needs one upstream connection; an HTTP/2 one carries up to 100 streams, and to
// an HTTP/1.1 origin each stream in flight needs an upstream connection of its own. Unbounded,
// one agent within limits.max_connections_per_client would hold a hundred times as many sockets
// and run the proxy out of descriptors for everyone. So the first upstream rides on the client
// connection's own slot, and each one more at a time takes a slot of the client's
// (limits.max_connections and max_connections_per_client), given back when it closes.
//
// @par Thread Safety
// One per client connection, used on its executor; the limiter is thread-safe.

#include "proxy/client_limiter.hpp"

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <memory>

namespace airlock::proxy {

class upstream_slots;

// One upstream connection's place, held as long as the connection (its tunnel_context) lives.
class upstream_slot {
 public:
  upstream_slot(std::shared_ptr<upstream_slots> owner, bool counted)
      : owner_(std::move(owner)), counted_(counted) {}
  ~upstream_slot();
  upstream_slot(const upstream_slot&) = delete;
  upstream_slot& operator=(const upstream_slot&) = delete;

 private:
  std::shared_ptr<upstream_slots> owner_;
  bool counted_;  // a slot of the client's, rather than the connection's own
};

class upstream_slots : public std::enable_shared_from_this<upstream_slots> {
 public:
  // `client`: the key the client connection was counted under (limiter_key).
  upstream_slots(client_limiter& limiter, boost::asio::ip::address client)
      : limiter_(limiter), client_(client) {}

  // A place for one more upstream connection, or null when the client's caps are reached.
  std::unique_ptr<upstream_slot> take(std::uint32_t max_total, std::uint32_t max_per_client);

 private:
  friend class upstream_slot;
  client_limiter& limiter_;
  boost::asio::ip::address client_;
  bool own_free_ = true;  // the client connection's own slot covers no upstream yet
};

}  // namespace airlock::proxy
