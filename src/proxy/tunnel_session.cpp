// The tunnel side of a session: an allowed CONNECT opened (connect.cpp), then relayed, or its
// requests served one by one (intercepted TLS, or plain HTTP) through the session's exchange
// loop, which the session passes in. The CONNECT's own record is kept truthful here.
#include "proxy/tunnel_session.hpp"

#include "core/saturating_steady.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/h2_session.hpp"
#include "proxy/h2_upstream.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "telemetry/metrics.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_cache.hpp"

#include <boost/asio/ssl.hpp>

#include <array>

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
using core::errc;

namespace {

// A tunnel whose requests were served is recorded by them (one record each); one that carried
// none is recorded once, as the tunnel the client got (docs/operations.md, the audit trail).
void end_tunnel_record(filters::exchange_record& rec, bool carried_requests) {
  rec.skipped = carried_requests;
  if (!carried_requests && rec.reason == errc::ok) rec.detail = "the tunnel carried no request";
}

// The tunnel's first upstream: a verified TLS connection from the worker's pool (`pooled`), or
// `checked`, the TCP connection the CONNECT made to the origin, which the first TLS upstream
// then uses (one connection to the origin per tunnel, not two).
void first_upstream(tunnel_context& t, const filters::exchange& ex, beast::tcp_stream& checked,
                    const connect_outcome& made, std::optional<tls_upstream>& pooled) {
  if (pooled) {
    adopt_pooled(t, std::move(*pooled), made.endpoint, upstream_h2_allowed(ex));
    pooled.reset();
    return;
  }
  t.early.emplace(std::move(checked.socket()));
  t.early_peer = made.endpoint;
  t.early_connect_time = made.connect_time;
}

// A response of the tunnel was cut short (session_context::response_cut): the client must see
// an error, not an end. Only a close_notify is a clean end in TLS (RFC 8446 section 6.1), but
// common clients read a close without it as one all the same (Python's ssl, and so urllib and
// requests, by default; OpenSSL 3 with SSL_OP_IGNORE_UNEXPECTED_EOF), a TCP reset included. What
// every TLS client fails on is a record it cannot accept: so, beneath the TLS stream, a fatal
// internal_error alert (RFC 8446 section 6.2) as a plaintext record, which a client in an
// encrypted session refuses as a protocol error. Then the TCP connection closes normally: a
// reset could discard the alert and the body before it from the send queue (socket(7),
// SO_LINGER).
asio::awaitable<void> signal_cut_response(session_context& s) {
  static constexpr std::array<std::uint8_t, 7> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 80};
  s.client.expires_after(std::chrono::seconds(2));
  co_await asio::async_write(s.client.socket(), asio::buffer(alert), use_tuple);
  s.response_cut = false;  // said in TLS: serve_connection need not reset the connection
}

// After the TLS handshake with the client: serve the decrypted requests one by one.
asio::awaitable<void> serve_intercepted(session_context& s, filters::exchange& ex,
                                        const active_policy& active, inner_exchanges inner,
                                        beast::tcp_stream& checked, const connect_outcome& made,
                                        std::optional<tls_upstream>& pooled) {
  tunnel_context t{
      .target = ex.target, .agent = ex.record.agent, .rule = ex.record.rule, .tls = active.tls};
  first_upstream(t, ex, checked, made, pooled);
  tls_client client_tls(s.client, *t.tls->server_context);
  std::string error;
  std::vector<tls::leaf_name> also;  // an IP literal's leaf also names the origin's names
  if (t.target.host.is_ip()) also = co_await origin_names(s, t, ex);
  auto leaf = t.tls->leaves->get(t.target.host.text, also, error);
  if (!leaf || !tls::use_leaf(client_tls.native_handle(), *leaf, error)) {
    ex.record.refuse(errc::internal_error, core::str_cat("cannot mint a certificate: ", error));
    co_return;
  }
  // HTTP/2 is offered when the CONNECT's rule carries it (`protocols`, default all).
  const auto* source = ex.rule ? ex.rule->source : nullptr;
  tls::offer_h2(client_tls.native_handle(),
                !source || (source->protocols & policy::model::protocol_h2) != 0);
  // The ClientHello we already read for the SNI check is handed to the handshake.
  client_tls.expires_after(core::saturating_steady(ex.snapshot->limits().head_timeout));
  auto [ec, used] = co_await client_tls.async_handshake(asio::ssl::stream_base::server,
                                                        s.buffer.data(), use_tuple);
  s.buffer.consume(used);
  if (ec) {
    // Most often: the client does not trust our CA. Nothing more can be said to it.
    ex.record.refuse(errc::bad_request,
                     core::str_cat("client TLS handshake failed: ",
                                   tls::handshake_failure_reason(client_tls.native_handle(), ec)));
    co_return;
  }
  const auto before = s.requests;
  if (tls::negotiated_alpn(client_tls.native_handle()) == tls::alpn_h2) {
    // The server preface (SETTINGS) is written at once: the ticket goes with it.
    tls::queue_session_ticket(client_tls.native_handle());
    // The HTTP/2 client's streams take their upstreams themselves (h2_stream_h1_upstream.cpp):
    // a pooled one goes back to the pool, where the first stream that needs one finds it.
    keep_tls_upstream(s, t);
    s.entry->idle = false;
    co_await serve_h2(s, client_tls, t);
  } else {
    t.ticket_due = true;
    for (;;) {
      s.entry->idle = true;
      if (s.w.shared().draining.load()) break;
      if (!co_await inner.tls(s, client_tls, &t)) break;
    }
  }
  // The origin's HTTP/2 connection, if the tunnel had one, ends with the tunnel; an HTTP/1.1
  // one left idle serves the next tunnel to the origin.
  if (t.h2) t.h2->close(true);
  keep_tls_upstream(s, t);
  end_tunnel_record(ex.record, s.requests > before);
  // A cut response ends the tunnel without close_notify, which would tell the client that what it
  // got is all there is (RFC 8446 section 6.1).
  if (s.response_cut) co_return co_await signal_cut_response(s);
  client_tls.expires_after(std::chrono::seconds(2));
  co_await client_tls.async_shutdown(use_tuple);
}

// Plain HTTP/1.x through a tunnel: its requests are served one by one like those of an
// intercepted tunnel, without TLS. The tunnel is recorded by its requests when it carried any.
asio::awaitable<void> serve_plain_tunnel(session_context& s, filters::exchange& ex,
                                         inner_exchanges inner) {
  tunnel_context t{
      .target = ex.target, .agent = ex.record.agent, .rule = ex.record.rule, .plain = true};
  const auto before = s.requests;
  for (;;) {
    s.entry->idle = true;
    if (s.w.shared().draining.load()) break;
    if (!co_await inner.plain(s, s.client, &t)) break;
  }
  end_tunnel_record(ex.record, s.requests > before);
}

}  // namespace

asio::awaitable<void> serve_connect(session_context& s, filters::exchange& ex,
                                    const active_policy& active, inner_exchanges inner) {
  beast::tcp_stream upstream(s.client.get_executor());
  s.entry->upstream = &upstream.socket();
  struct detach_upstream {
    session_entry& e;
    ~detach_upstream() {
      e.upstream = nullptr;
      e.tunnel_agent.clear();
    }
  } detach{*s.entry};
  s.entry->tunnel_agent = ex.record.agent;  // the kill switch cuts the tunnel (worker.hpp)
  struct record_cut {
    session_entry& e;
    filters::exchange_record& rec;
    ~record_cut() {
      if (e.cut) rec.refuse(errc::agent_stopped, "tunnel cut: the agent was stopped");
    }
  } cut_recorded{*s.entry, ex.record};
  connect_outcome made;
  std::optional<tls_upstream> pooled;
  const auto mode = co_await open_tunnel(s, ex, active, upstream, &made, &pooled);
  if (mode == tunnel_mode::ended) co_return;
  auto* metrics = s.w.shared().metrics;
  if (metrics) metrics->tunnel_opened();
  struct tunnel_gauge {
    telemetry::metrics* m;
    ~tunnel_gauge() {
      if (m) m->tunnel_closed();
    }
  } gauge{metrics};
  if (mode == tunnel_mode::opaque) co_return co_await relay_opaque(s, ex, upstream);
  if (mode == tunnel_mode::plain_http) {
    // The TCP connection made to check the origin is dropped; the first request inside connects.
    upstream.close();
    co_return co_await serve_plain_tunnel(s, ex, inner);
  }
  co_await serve_intercepted(s, ex, active, inner, upstream, made, pooled);
}

}  // namespace airlock::proxy
