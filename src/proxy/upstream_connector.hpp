#pragma once
// Resolve, guard, connect: the one way the proxy opens an upstream connection. The address
// guard checks every address the name resolves to (or the rule pins) before any connect, and
// the socket connects only to those checked addresses, so DNS rebinding between a check and
// a second lookup cannot happen: there is no second lookup.

#include "core/errc.hpp"
#include "net/address_guard.hpp"
#include "net/host.hpp"
#include "policy/model.hpp"
#include "proxy/connection_pool.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>

namespace airlock::policy {
struct compiled_rule;
}

namespace airlock::proxy {

struct upstream_request {
  const net::normalized_host* host = nullptr;
  std::uint16_t port = 0;
  std::span<const boost::asio::ip::address> pinned;  // rule's fixed addresses, if any
  std::span<const net::cidr> extra_allow;            // rule's CIDR exceptions
  // The proxy's own listening endpoints ("proxy_itself"), checked before the policy's guard;
  // null when there are none to refuse (tests).
  const net::address_guard* own = nullptr;
  std::chrono::milliseconds dns_timeout{5'000};
  std::chrono::milliseconds connect_timeout{5'000};
};

struct connect_outcome {
  core::errc error = core::errc::ok;
  std::string detail;                       // e.g. "origin.test resolves to 127.0.0.1 (loopback)"
  boost::asio::ip::tcp::endpoint endpoint;  // the address connected to
  std::chrono::microseconds connect_time{0};
};

// "1.2.3.4:80" / "[::1]:443"
std::string to_string(const boost::asio::ip::tcp::endpoint& ep);

// On success `stream` is connected. On failure it is closed and the outcome says why.
boost::asio::awaitable<connect_outcome> connect_upstream(boost::beast::tcp_stream& stream,
                                                         const net::address_guard& guard,
                                                         const upstream_request& request);

// The request for `target` under `rule` (its pins and CIDR exceptions), the policy's limits, and
// the proxy's own endpoints.
upstream_request upstream_for(const net::authority& target, const policy::compiled_rule& rule,
                              const policy::model::limits& limits, const net::address_guard* own);

// For plain HTTP, first: an idle pooled connection to the same host:port whose address still
// passes the guard, the proxy's own endpoints and the request's pins, moved into `upstream` (its
// endpoint returned); nullopt when there is none, and then connect_upstream is the way. (Not a
// coroutine: taking from the pool never waits.)
std::optional<boost::asio::ip::tcp::endpoint> take_pooled(plain_upstream_ptr& upstream,
                                                          connection_pool& pool,
                                                          const std::string& pool_key,
                                                          const net::address_guard& guard,
                                                          const upstream_request& request);

// Whether a connection made earlier to `ep` may still serve `request`: the address passes the
// guard, the proxy's own endpoints and the request's pins as they are now (the policy may have
// changed since it was made).
bool still_allowed(const boost::asio::ip::tcp::endpoint& ep, const net::address_guard& guard,
                   const upstream_request& request);

}  // namespace airlock::proxy
