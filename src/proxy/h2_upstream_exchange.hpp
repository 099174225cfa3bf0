#pragma once
// An exchange carried to the origin over HTTP/2 (h2_upstream.hpp): the request head as an h2
// field list, the origin's answer read from the stream (bounded waits, the response size limit)
// and, for an HTTP/1.1 client in an intercepted tunnel, the whole bridge: body up, answer back
// through the chain's response hooks, re-framed for HTTP/1.1 (trailers in the last chunk). The
// HTTP/2 client's bridge is in h2_stream.cpp.

#include "filters/chain.hpp"
#include "proxy/exchange_upstream.hpp"
#include "proxy/h2_upstream.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>

#include <string>

namespace airlock::proxy {

// Whether this exchange may go to its origin over HTTP/2: its rule's `protocols` carry h2 and it
// is no upgrade (a WebSocket upgrade needs HTTP/1.1 end to end).
bool upstream_h2_allowed(const filters::exchange& ex);

// The head rewritten for the upstream (Host, target, hop-by-hop fields gone) as an HTTP/2
// request: pseudo-headers from the method, target and Host; names lower case; the fields
// RFC 9113 section 8.2.2 forbids left out; "te: trailers" (the proxy passes trailers on).
h2::header_list h2_request_fields(const http::request<http::buffer_body>& req);

// The origin's final head into `res` (status and fields, pseudo-headers left out).
void h2_fill_response(const h2::header_list& fields, http::response<http::buffer_body>& res);

// Trailer fields as they may be passed on: pseudo-headers and the fields RFC 9110 section 6.5.1
// does not allow in trailers (framing, routing, authentication, controls) left out.
h2::header_list h2_trailers_to_forward(const h2::header_list& fields);

// Waits (response_timeout) for the origin's final head on `call`. False with the failure
// recorded (timeout, reset, oversized head, connection lost).
boost::asio::awaitable<bool> await_h2_head(h2_upstream_call& call, filters::exchange_record& rec,
                                           const policy::model::limits& limits);

// The request's stream ended unanswered. Where its renewal (h2_upstream_call) found no
// connection because connecting failed, that failure is recorded as the reason (the address
// guard's refusal stays a denial, not an upstream error) and this returns true.
bool record_renewal_failure(const h2_upstream_call& call, filters::exchange_record& rec);

enum class h2_piece { more, last, failed };
// Moves the response body bytes received so far into `piece` (waiting up to idle_timeout for
// some), counted against response_bytes in `total`. `failed` has the failure recorded; the
// caller gives the bytes back to the window (call.consume) once they went on.
boost::asio::awaitable<h2_piece> next_h2_piece(h2_upstream_call& call, std::string& piece,
                                               filters::exchange_record& rec,
                                               const policy::model::limits& limits,
                                               std::uint64_t& total);

// Makes the tunnel's upstream ready for this exchange: the HTTP/2 one it has, or a new
// connection (kept by the tunnel as t.h2 when the origin picks h2, else as t.upstream).
// Returns false when the connection failed (recorded, not answered).
boost::asio::awaitable<bool> ensure_tunnel_upstream(session_context& s, tunnel_context& t,
                                                    filters::exchange& ex);

// An HTTP/1.1 client's request (inside the intercepted tunnel `t`) over the tunnel's HTTP/2
// upstream. Returns whether the client connection may carry another request.
// `reconnect`: for a refused request when `up` takes no more streams (h2_upstream_call).
boost::asio::awaitable<bool> forward_h1_over_h2(session_context& s, tls_client& client,
                                                h2_upstream& up, filters::exchange& ex,
                                                filters::chain& chain, h1::request_parser& req_p,
                                                const forward_params& fp, h2_reconnect reconnect);

}  // namespace airlock::proxy
