#pragma once
// Where a forwarded exchange gets its upstream: for plain HTTP a pooled connection or a new one
// (upstream_connector), for a request inside an intercepted tunnel the tunnel's TLS upstream,
// (re)connected when needed. Then forward() over it. Returns whether the client connection may
// carry another request; any answer of the proxy's own has been sent.

#include "filters/chain.hpp"
#include "proxy/forward.hpp"
#include "proxy/session_context.hpp"
#include "tls/socket_stream.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace airlock::proxy {

// The client side of an intercepted tunnel.
using tls_client = tls::socket_stream<boost::beast::tcp_stream&>;

// A plain request's upstream: a pooled connection or a new one; a pooled one the origin closed
// as it was reused is replaced once for a bodiless request.
boost::asio::awaitable<bool> forward_plain(session_context& s, filters::exchange& ex,
                                           filters::chain& chain, h1::request_parser& req_p,
                                           forward_params& fp, bool keep_after_refusal);

// Inside an intercepted tunnel: the tunnel's TLS upstream, (re)connected when needed; one that
// carried an exchange before (in this tunnel or, from the worker's TLS pool, an earlier one) and
// that the origin closed meanwhile is replaced once for a bodiless request.
boost::asio::awaitable<bool> forward_in_tunnel(session_context& s, tls_client& client,
                                               tunnel_context& t, filters::exchange& ex,
                                               filters::chain& chain, h1::request_parser& req_p,
                                               forward_params& fp, bool keep_after_refusal);

}  // namespace airlock::proxy
