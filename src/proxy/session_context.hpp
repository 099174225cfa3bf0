#pragma once
// The state of one client connection, shared by the exchanges it carries, and of one
// intercepted tunnel inside it.

#include "net/host.hpp"
#include "net/peer_binary.hpp"
#include "proxy/interception.hpp"
#include "proxy/upstream_slots.hpp"
#include "proxy/worker.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>

namespace airlock::proxy {

class h2_upstream;

struct session_context {
  worker& w;
  boost::beast::tcp_stream client;
  boost::asio::ip::tcp::endpoint client_endpoint;
  std::string client_text;
  boost::beast::flat_buffer buffer;
  std::list<session_entry>::iterator entry;
  std::uint64_t requests = 0;  // request heads started on this connection
  std::string relay_agent;     // set for relay connections: the agent the launcher vouches for
  std::optional<net::peer_binary> relay_binary;  // relay connections: the program, if known
  // A response went out with its body cut short (forward_result::cut): the connection ends
  // abortively, so that the client sees an error rather than an end that would make a
  // close-delimited (HTTP/1.0) body look whole (RFC 9112 section 9.8): inside an intercepted
  // tunnel without close_notify, with a fatal alert instead (tunnel_session.cpp), else with a
  // TCP reset (session.cpp).
  bool response_cut = false;
};

// tls_upstream: connection_pool.hpp

// An intercepted CONNECT, or one the client speaks plain HTTP through (`plain`: no TLS either
// side, each request goes out on a pooled connection as a plain request would). Intercepted: the
// client speaks TLS to us (a leaf we minted), we speak TLS to the
// origin (its real certificate verified). The upstream is connected lazily, and again when the
// origin closes it between requests.
struct tunnel_context {
  net::authority target;
  std::string agent;      // identified at CONNECT; inner requests cannot change it
  std::string rule = {};  // the rule that allowed the CONNECT (its rate slots are the tunnel's)
  std::shared_ptr<const interception> tls = nullptr;
  std::optional<tls_upstream> upstream = std::nullopt;
  boost::beast::flat_buffer upstream_buffer = {};
  std::string upstream_text = {};
  bool plain = false;  // the client speaks plain HTTP inside (no TLS, no upstream kept here)
  // The origin picked h2: the tunnel's requests go as streams on this one connection
  // (h2_upstream.hpp); `upstream` is then empty unless a request needed HTTP/1.1 (an upgrade).
  std::shared_ptr<h2_upstream> h2 = nullptr;
  // Intercepted: the TCP connection the CONNECT opened to check the origin, kept for the first
  // TLS upstream (one connection per tunnel, not two); its address and how long it took.
  std::optional<boost::asio::ip::tcp::socket> early = std::nullopt;
  boost::asio::ip::tcp::endpoint early_peer = {};
  std::chrono::microseconds early_connect_time{0};
  // How `upstream` came to be: the address it goes to, whether ALPN offered h2 (its pool key),
  // and whether it carried an exchange before (in this tunnel, or in an earlier one that left it
  // in the worker's TLS pool): then a bodiless request that finds it closed is sent again on a
  // new connection.
  boost::asio::ip::tcp::endpoint upstream_peer = {};
  bool upstream_offered_h2 = false;
  bool upstream_reused = false;
  // The client's TLS 1.3 session ticket waits for the first request's head, so that it leaves
  // with the answer (tls::queue_session_ticket).
  bool ticket_due = false;
  // An HTTP/2 stream's upstream: its place among the client's connections (upstream_slots.hpp).
  std::unique_ptr<upstream_slot> slot = nullptr;
};

// The key the client connection was counted under in the worker's client_limiter: its source
// address, or for relay connections (which always name their agent) the one loopback key they
// share (relay_listener.cpp).
inline boost::asio::ip::address limiter_key(const session_context& s) {
  if (!s.relay_agent.empty()) return boost::asio::ip::address_v4::loopback();
  return s.client_endpoint.address();
}

}  // namespace airlock::proxy
