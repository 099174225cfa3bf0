#pragma once
// The CONNECT hand-off, once the chain has allowed a CONNECT: connect to the upstream (answering
// the client when that fails), send 200, then the first bytes must be a TLS ClientHello whose
// SNI names the CONNECT host (an IP-literal target may omit SNI, and may carry non-TLS traffic
// since there is no name to check). The session then drives what it became: an opaque relay or
// an interception. A tunnel whose first bytes are an HTTP/1.x request line (under an inspecting
// rule, or an opaque one to a host name) is served as plain HTTP requests instead.

#include "filters/exchange.hpp"
#include "proxy/session_context.hpp"
#include "proxy/upstream_connector.hpp"
#include "tls/leaf_name.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <vector>

namespace airlock::proxy {

struct active_policy;

enum class tunnel_mode {
  ended,       // refused or failed (recorded; answered where an answer can be given)
  opaque,      // relay the bytes: `upstream` is connected
  intercept,   // terminate TLS with a minted leaf and serve the requests inside
  plain_http,  // the client speaks plain HTTP/1.x inside: serve its requests (scheme http)
};

// `made`, when given, is set to the connection `upstream` got (its address and connect time).
// With `pooled`, an inspecting rule first takes an idle verified TLS connection to the origin
// from the worker's TLS pool (one an earlier tunnel left): `pooled` then holds it, `upstream`
// stays unconnected, and `made` has its address and no connect time.
boost::asio::awaitable<tunnel_mode> open_tunnel(session_context& s, filters::exchange& ex,
                                                const active_policy& active,
                                                boost::beast::tcp_stream& upstream,
                                                connect_outcome* made = nullptr,
                                                std::optional<tls_upstream>* pooled = nullptr);

// Relays an opaque tunnel until either side ends it or it idles out.
boost::asio::awaitable<void> relay_opaque(session_context& s, filters::exchange& ex,
                                          boost::beast::tcp_stream& upstream);

// Connects (or reconnects) the TLS upstream of an intercepted tunnel: TCP through the address
// guard (the first time, the CONNECT's own connection, t.early, when its address still passes;
// a new one if the origin closed it meanwhile), then a handshake that verifies the origin's
// certificate for the CONNECT name. With
// `offer_h2`, ALPN offers "h2" too (tls::negotiated_alpn then says what the origin picked).
// `from_pool`: when there is no CONNECT connection to use, an idle one from the worker's TLS
// pool is taken first (t.upstream_reused says so; the caller must be ready to replace it if the
// origin closed it). On failure the tunnel's upstream is empty and the outcome says why.
boost::asio::awaitable<connect_outcome> connect_tls_upstream(session_context& s, tunnel_context& t,
                                                             const filters::exchange& ex,
                                                             bool offer_h2 = false,
                                                             bool from_pool = false);

// Makes `pooled` (a connection from the worker's TLS pool to `peer`, made with h2 offered or not)
// the tunnel's upstream, marked reused: the caller replaces it if the origin closed it.
void adopt_pooled(tunnel_context& t, tls_upstream pooled,
                  const boost::asio::ip::tcp::endpoint& peer, bool offered_h2);

// An intercepted tunnel that ends with its HTTP/1.1 upstream idle (the last exchange complete,
// nothing unread) leaves it in the worker's TLS pool for the next tunnel to the same origin; not
// while draining, nor when the kill switch cut the tunnel.
void keep_tls_upstream(session_context& s, tunnel_context& t);

// For an IP-literal CONNECT that is intercepted: connects the TLS upstream before the client's
// handshake and returns the names its verified certificate carries, for the minted leaf (a
// client that sends no SNI for an IP target may check another name: npm's agent checks
// localhost). Empty when the upstream cannot be reached or verified: the first request then
// reconnects and is answered with the failure.
boost::asio::awaitable<std::vector<tls::leaf_name>> origin_names(session_context& s,
                                                                 tunnel_context& t,
                                                                 const filters::exchange& ex);

}  // namespace airlock::proxy
