#pragma once
// An intercepted tunnel whose client chose HTTP/2 (ALPN "h2"): its streams served, each an
// exchange through the filter chain (h2_connection.hpp, h2_stream.cpp).

#include "proxy/exchange_upstream.hpp"
#include "proxy/session_context.hpp"

#include <boost/asio/awaitable.hpp>

namespace airlock::proxy {

// Serves the connection until the client or the proxy ends it. `t` is the tunnel (target, agent,
// interception); each stream counts as one of the session's requests.
boost::asio::awaitable<void> serve_h2(session_context& s, tls_client& client, tunnel_context& t);

}  // namespace airlock::proxy
