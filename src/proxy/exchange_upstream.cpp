#include "proxy/exchange_upstream.hpp"

#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "telemetry/metrics.hpp"

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
using core::errc;

asio::awaitable<bool> forward_plain(session_context& s, filters::exchange& ex,
                                    filters::chain& chain, h1::request_parser& req_p,
                                    forward_params& fp, bool keep_after_refusal) {
  const auto& snap = *ex.snapshot;
  const auto& limits = snap.limits();
  auto& rec = ex.record;
  const auto ur = upstream_for(ex.target, *ex.rule, limits, s.w.shared().own_guard.get());
  const std::string pool_key = core::str_cat(ex.target.host.text, ':', ex.target.port);
  plain_upstream_ptr up;
  bool reused = false;
  asio::ip::tcp::endpoint peer;
  forward_result result;
  for (int attempt = 0; attempt < 2; ++attempt) {
    connect_outcome outcome;
    if (attempt == 0) {
      if (auto ep = take_pooled(up, s.w.pool(), pool_key, snap.guard(), ur)) {
        reused = true;
        outcome.endpoint = *ep;
      }
      if (s.w.shared().metrics) s.w.shared().metrics->pool_reuse(reused);
    }
    if (!up) up = std::make_unique<plain_upstream>(s.client.get_executor());
    if (!reused || attempt > 0) {
      outcome = co_await connect_upstream(up->stream, snap.guard(), ur);
      if (outcome.error == errc::ok) up->peer_text = to_string(outcome.endpoint);
    }
    if (outcome.error != errc::ok) {
      rec.connect_failed(outcome.error);
      rec.refuse(outcome.error, outcome.detail);
      co_return co_await send_answer(s.client, rec, fp.version, keep_after_refusal);
    }
    rec.upstream = up->peer_text;
    peer = outcome.endpoint;
    rec.connect_time = outcome.connect_time;
    fp.retry_if_stale = attempt == 0 && reused && !ex.has_body;
    s.entry->upstream = &up->stream.socket();
    result =
        co_await forward(s.w, s.client, s.buffer, up->stream, up->buffer, req_p, chain, limits, fp);
    s.entry->upstream = nullptr;
    if (result.cut) s.response_cut = true;
    if (!result.stale_connection) break;
    up->stream.close();
    up->buffer.clear();
  }
  if (result.upstream_reusable && !s.w.shared().draining.load()) {
    up->stream.expires_never();
    h1::release_large_buffer(up->buffer);
    s.w.pool().put(pool_key, std::move(up), peer);
  }
  co_return result.client_continues;
}

asio::awaitable<bool> forward_in_tunnel(session_context& s, tls_client& client, tunnel_context& t,
                                        filters::exchange& ex, filters::chain& chain,
                                        h1::request_parser& req_p, forward_params& fp,
                                        bool keep_after_refusal) {
  auto& rec = ex.record;
  forward_result result;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // HTTP/2 to the origin when it picks h2 (the tunnel keeps that connection), else HTTP/1.1.
    if (!co_await ensure_tunnel_upstream(s, t, ex))
      co_return co_await send_answer(client, rec, fp.version, keep_after_refusal);
    if (t.h2 && t.h2->usable() && upstream_h2_allowed(ex)) {
      auto up = t.h2;  // (held: a later request may replace the tunnel's)
      rec.upstream_protocol = "h2";
      // A request the origin refused unprocessed, on a connection it then closed to new
      // streams (GOAWAY), goes again on the tunnel's next HTTP/2 upstream.
      // (ensure_tunnel_upstream records a failed connect's reason; the call keeps it too.)
      auto reconnect = [&s, &t, &ex]() -> asio::awaitable<h2_reconnected> {
        if (!co_await ensure_tunnel_upstream(s, t, ex))
          co_return h2_reconnected{ex.record.reason, ex.record.detail};
        co_return h2_reconnected{t.h2 && t.h2->usable() ? t.h2 : nullptr};
      };
      co_return co_await forward_h1_over_h2(s, client, *up, ex, chain, req_p, fp, reconnect);
    }
    rec.upstream = t.upstream_text;
    // An upstream that carried an exchange before may have been closed by the origin while it
    // idled (servers close idle connections): a bodiless request that finds it so goes again,
    // once, on a new connection.
    fp.retry_if_stale = attempt == 0 && t.upstream_reused && !ex.has_body;
    s.entry->upstream = &t.upstream->socket();
    result = co_await forward(s.w, client, s.buffer, *t.upstream, t.upstream_buffer, req_p, chain,
                              ex.snapshot->limits(), fp);
    s.entry->upstream = nullptr;
    if (result.cut) s.response_cut = true;
    t.upstream_reused = result.upstream_reusable && t.upstream->nothing_buffered();
    if (!t.upstream_reused) t.upstream.reset();
    if (!result.stale_connection) break;
  }
  co_return result.client_continues;
}

}  // namespace airlock::proxy
