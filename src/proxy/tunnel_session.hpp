#pragma once
// The tunnel side of a session (tunnel_session.cpp): what an allowed CONNECT becomes.

#include "filters/exchange.hpp"
#include "proxy/exchange_upstream.hpp"
#include "proxy/session_context.hpp"

#include <boost/asio/awaitable.hpp>

namespace airlock::proxy {

struct active_policy;

// The session's exchange loop step for the requests inside a tunnel: one exchange, returning
// whether the client connection may carry another. The session passes its own in, so that it
// drives the requests of a tunnel as it drives those of a plain connection.
struct inner_exchanges {
  boost::asio::awaitable<bool> (*tls)(session_context&, tls_client&, tunnel_context*);
  boost::asio::awaitable<bool> (*plain)(session_context&, boost::beast::tcp_stream&,
                                        tunnel_context*);
};

// An allowed CONNECT: the tunnel is opened, then relayed opaquely, or its requests are served
// one by one through `inner` (intercepted TLS, or plain HTTP/1.x). The exchange (and the chain's
// hold on concurrency slots) lasts as long as the tunnel; the kill switch cuts it.
boost::asio::awaitable<void> serve_connect(session_context& s, filters::exchange& ex,
                                           const active_policy& active, inner_exchanges inner);

}  // namespace airlock::proxy
