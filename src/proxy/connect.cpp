#include "proxy/connect.hpp"

#include "core/saturating_steady.hpp"
#include "core/str_cat.hpp"
#include "net/client_hello.hpp"
#include "net/http_framing.hpp"
#include "policy/snapshot.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "proxy/session_io.hpp"
#include "proxy/tunnel.hpp"
#include "telemetry/metrics.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_minter.hpp"
#include "tls/upstream_sessions.hpp"

#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <array>
#include <optional>

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
using core::errc;

namespace {

// What the tunnel's first bytes are: a ClientHello (possibly incomplete or malformed), or not
// TLS, in which case `http` says whether they begin an HTTP/1.x request line.
struct first_bytes {
  net::client_hello hello;
  bool http = false;
};

// Reads until the first bytes say what they are: a whole ClientHello, or a whole HTTP/1.x
// request line (a client that speaks plain HTTP through the tunnel), or neither. They may arrive
// in pieces, and may already be in the buffer if the client did not wait for our 200. Both
// parsers resume where the previous read left off (the buffer only grows here), so bytes
// dribbled in tiny reads cost no more than bytes sent at once. Nullopt when nothing came
// (recorded).
asio::awaitable<std::optional<first_bytes>> read_first_bytes(session_context& s,
                                                             filters::exchange& ex) {
  first_bytes first;
  const auto& limits = ex.snapshot->limits();
  net::client_hello_parser hello_parser;
  net::request_line_scanner line_scanner(limits.header_bytes);
  s.client.expires_after(core::saturating_steady(limits.head_timeout));
  for (;;) {
    auto data = s.buffer.cdata();
    first.hello = hello_parser.parse({static_cast<const std::uint8_t*>(data.data()), data.size()});
    if (first.hello.status == net::hello_status::not_tls) {
      const auto line = line_scanner.scan({static_cast<const char*>(data.data()), data.size()});
      if (line != net::request_line_status::need_more) {
        first.http = line == net::request_line_status::http1;
        break;
      }
    } else if (first.hello.status != net::hello_status::need_more) {
      break;
    }
    if (s.buffer.size() >=
        std::max<std::size_t>(net::max_client_hello_bytes, limits.header_bytes)) {
      if (first.hello.status == net::hello_status::need_more)
        first.hello.status = net::hello_status::malformed;
      break;
    }
    auto [ec, n] = co_await s.client.async_read_some(s.buffer.prepare(16 * 1024), use_tuple);
    s.buffer.commit(n);
    if (ec) {
      ex.record.reason = ec == beast::error::timeout ? errc::head_timeout : errc::bad_request;
      ex.record.detail = "client sent no TLS ClientHello";
      co_return std::nullopt;
    }
  }
  s.client.expires_never();
  co_return first;
}

// The tunnel's first bytes against its CONNECT host: the refusal (ok when they pass).
errc check_client_hello(const net::client_hello& hello, const filters::exchange& ex,
                        std::string& why) {
  const auto& target = ex.target;
  const bool name_based = !target.host.is_ip();
  if (hello.status == net::hello_status::complete) {
    if (!hello.server_name) {
      if (!name_based) return errc::ok;
      why = core::str_cat("CONNECT ", target.host.text, " sent no SNI");
      return errc::sni_mismatch;
    }
    auto sni = net::normalize_host(*hello.server_name);
    if (sni && sni->text == target.host.text) return errc::ok;
    why = core::str_cat("CONNECT ", target.host.text, " but SNI ",
                        sni ? sni->text : std::string("(invalid)"));
    return errc::sni_mismatch;
  }
  if (name_based || hello.status == net::hello_status::malformed || ex.rule->inspect) {
    why = core::str_cat("CONNECT ", target.host.text, " did not start with a TLS ClientHello");
    return errc::not_tls;
  }
  return errc::ok;
}

// An idle TLS connection to `target` that an earlier tunnel left in the worker's pool (verified
// for the same name by the same interception, h2 offered alike), whose address still passes the
// policy as it is now: no TCP connect, no upstream handshake. `peer` is set to its address.
std::optional<tls_upstream> take_tls_pooled(session_context& s, const net::authority& target,
                                            const interception& tls, bool offer_h2,
                                            const net::address_guard& guard,
                                            const upstream_request& request,
                                            asio::ip::tcp::endpoint& peer) {
  auto taken =
      s.w.tls_pool().take(tls_pool_key(target.host.text, target.port, offer_h2), &peer, &tls);
  if (taken && !still_allowed(peer, guard, request)) taken.reset();
  if (auto* m = s.w.shared().metrics) m->pool_reuse(taken.has_value(), true);
  return taken;
}

}  // namespace

asio::awaitable<tunnel_mode> open_tunnel(session_context& s, filters::exchange& ex,
                                         const active_policy& active, beast::tcp_stream& upstream,
                                         connect_outcome* made,
                                         std::optional<tls_upstream>* pooled) {
  auto& rec = ex.record;
  const auto& snap = *ex.snapshot;
  const auto& rule = *ex.rule;
  const unsigned version = ex.request->version();
  if (rule.inspect && !active.tls) {
    rec.refuse(errc::internal_error, "rule inspects but no interception CA is loaded");
    co_await send_answer(s.client, rec, version, false);
    co_return tunnel_mode::ended;
  }
  const auto request = upstream_for(ex.target, rule, snap.limits(), s.w.shared().own_guard.get());
  connect_outcome outcome;
  // An intercepted CONNECT first looks in the pool.
  if (pooled && rule.inspect) {
    if (auto taken = take_tls_pooled(s, ex.target, *active.tls, upstream_h2_allowed(ex),
                                     snap.guard(), request, outcome.endpoint))
      pooled->emplace(std::move(*taken));
  }
  if (!pooled || !*pooled) outcome = co_await connect_upstream(upstream, snap.guard(), request);
  if (outcome.error != errc::ok) {
    rec.connect_failed(outcome.error);
    rec.refuse(outcome.error, outcome.detail);
    co_await send_answer(s.client, rec, version, false);
    co_return tunnel_mode::ended;
  }
  rec.upstream = to_string(outcome.endpoint);
  rec.connect_time = outcome.connect_time;
  if (made) *made = outcome;

  static constexpr std::string_view established = "HTTP/1.1 200 Connection Established\r\n\r\n";
  s.client.expires_after(core::saturating_steady(snap.limits().idle_timeout));
  auto [wec, wn] =
      co_await asio::async_write(s.client.socket(), asio::buffer(established), use_tuple);
  if (wec) co_return tunnel_mode::ended;
  rec.status = 200;

  const auto first = co_await read_first_bytes(s, ex);
  if (!first) co_return tunnel_mode::ended;
  // Plain HTTP through the tunnel (Node's undici sends `CONNECT host:80` for http:// URLs): each
  // request inside is served and decided on its own, as scheme http. Not for an opaque tunnel
  // to an IP literal, which may carry any protocol.
  if (first->http && (rule.inspect || !ex.target.host.is_ip())) co_return tunnel_mode::plain_http;
  const auto* hello = &first->hello;
  std::string why;
  if (const errc refusal = check_client_hello(*hello, ex, why); refusal != errc::ok) {
    if (ex.report_mode && !rule.inspect) {
      rec.report(refusal, why);
    } else {
      // Recorded as what the client got: 200 (already sent), then a TLS alert or the close.
      const bool complete = hello->status == net::hello_status::complete;
      rec.refuse(refusal, core::str_cat(why, complete ? "; after 200, a TLS unrecognized_name alert"
                                                      : "; after 200, the connection closed"));
      // A fatal unrecognized_name alert (RFC 6066 section 3) tells a TLS client plainly that
      // the name was refused.
      static constexpr std::array<std::uint8_t, 7> alert{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 112};
      if (complete) co_await asio::async_write(s.client.socket(), asio::buffer(alert), use_tuple);
      co_return tunnel_mode::ended;
    }
  }
  co_return rule.inspect ? tunnel_mode::intercept : tunnel_mode::opaque;
}

asio::awaitable<void> relay_opaque(session_context& s, filters::exchange& ex,
                                   beast::tcp_stream& upstream) {
  auto& rec = ex.record;
  // Forward what the client already sent, then relay.
  if (s.buffer.size() > 0) {
    auto [ec, n] = co_await asio::async_write(upstream.socket(), s.buffer.data(), use_tuple);
    rec.bytes_in += n;
    s.buffer.consume(s.buffer.size());
    if (ec) co_return;
  }
  auto totals =
      co_await splice(s.client.socket(), upstream.socket(), ex.snapshot->limits().idle_timeout,
                      byte_throttle{ex.upload}, byte_throttle{ex.download});
  rec.bytes_in += totals.client_to_upstream;
  rec.bytes_out += totals.upstream_to_client;
}

namespace {

// Moves the CONNECT's own connection (t.early) into the tunnel's upstream when its address still
// passes the policy as it is now; false when there is none (already used, or never made).
bool adopt_early(tunnel_context& t, const net::address_guard& guard,
                 const upstream_request& request) {
  if (!t.early) return false;
  asio::ip::tcp::socket early = std::move(*t.early);
  t.early.reset();
  if (!early.is_open() || !still_allowed(t.early_peer, guard, request)) return false;
  t.upstream->transport().socket() = std::move(early);
  return true;
}

// A handshake on the CONNECT's own connection that failed this way met a connection the origin
// had closed while the client was getting ready (servers close idle connections): connect anew.
bool closed_meanwhile(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

}  // namespace

asio::awaitable<connect_outcome> connect_tls_upstream(session_context& s, tunnel_context& t,
                                                      const filters::exchange& ex, bool offer_h2,
                                                      bool from_pool) {
  const auto& snap = *ex.snapshot;
  const auto& limits = snap.limits();
  const auto request = upstream_for(t.target, *ex.rule, limits, s.w.shared().own_guard.get());
  if (from_pool && !t.early) {
    connect_outcome outcome;
    if (auto taken = take_tls_pooled(s, t.target, *t.tls, offer_h2, snap.guard(), request,
                                     outcome.endpoint)) {
      adopt_pooled(t, std::move(*taken), outcome.endpoint, offer_h2);
      co_return outcome;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    t.upstream.emplace(s.client.get_executor(), *t.tls->client_context);
    t.upstream_buffer.clear();
    const bool early = attempt == 0 && adopt_early(t, snap.guard(), request);
    connect_outcome outcome;
    if (early) {
      outcome.endpoint = t.early_peer;
      outcome.connect_time = t.early_connect_time;  // recorded by the first request only
    } else {
      attempt = 1;  // a new connection is not tried twice
      outcome = co_await connect_upstream(t.upstream->transport(), snap.guard(), request);
      if (outcome.error != errc::ok) {
        t.upstream.reset();
        co_return outcome;
      }
    }
    std::string error;
    if (!tls::set_upstream_host(t.upstream->native_handle(), t.target.host.text, error)) {
      t.upstream.reset();
      outcome.error = errc::upstream_tls_failed;
      outcome.detail = error;
      co_return outcome;
    }
    if (offer_h2 && !tls::offer_upstream_h2(t.upstream->native_handle())) {
      t.upstream.reset();
      outcome.error = errc::upstream_tls_failed;
      outcome.detail = "cannot offer ALPN h2";
      co_return outcome;
    }
    // A session from an earlier verified handshake with this name saves the full handshake.
    t.tls->upstream_sessions->resume(t.upstream->native_handle());
    auto started = std::chrono::steady_clock::now();
    t.upstream->expires_after(core::saturating_steady(limits.connect_timeout));
    auto [ec] = co_await t.upstream->async_handshake(asio::ssl::stream_base::client, use_tuple);
    if (ec && early && closed_meanwhile(ec)) continue;
    if (ec) {
      outcome.error =
          ec == beast::error::timeout ? errc::connect_timeout : errc::upstream_tls_failed;
      outcome.detail =
          core::str_cat("TLS to ", t.target.host.text, ": ",
                        tls::handshake_failure_reason(t.upstream->native_handle(), ec));
      t.upstream.reset();
      co_return outcome;
    }
    if (auto* m = s.w.shared().metrics)
      m->upstream_tls_time(std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now() - started));
    t.upstream_text = to_string(outcome.endpoint);
    t.upstream_peer = outcome.endpoint;
    t.upstream_offered_h2 = offer_h2;
    t.upstream_reused = false;
    co_return outcome;
  }
  co_return connect_outcome{};  // not reached: the second attempt always returns
}

void adopt_pooled(tunnel_context& t, tls_upstream pooled, const asio::ip::tcp::endpoint& peer,
                  bool offered_h2) {
  t.upstream.emplace(std::move(pooled));
  t.upstream_buffer.clear();
  t.upstream_text = to_string(peer);
  t.upstream_peer = peer;
  t.upstream_offered_h2 = offered_h2;
  t.upstream_reused = true;
}

void keep_tls_upstream(session_context& s, tunnel_context& t) {
  if (!t.upstream || !t.tls || s.entry->cut || s.w.shared().draining.load()) return;
  // (An upstream the origin picked h2 for is t.h2's, unless no request took it up.)
  if (tls::negotiated_alpn(t.upstream->native_handle()) == tls::alpn_h2) return;
  if (!t.upstream->nothing_buffered()) return;
  t.upstream->expires_never();
  t.upstream->release_buffers();  // its three buffers (about 50 KiB) wait unallocated
  s.w.tls_pool().put(tls_pool_key(t.target.host.text, t.target.port, t.upstream_offered_h2),
                     std::move(*t.upstream), t.upstream_peer, t.tls);
  t.upstream.reset();
}

asio::awaitable<std::vector<tls::leaf_name>> origin_names(session_context& s, tunnel_context& t,
                                                          const filters::exchange& ex) {
  // h2 offered as the CONNECT's rule allows: an origin that speaks only h2 must still serve
  // the tunnel's requests over this connection (ensure_tunnel_upstream takes it up). A pooled
  // connection (open_tunnel) was verified the same way and carries the same certificate.
  if (!t.upstream) {
    const auto outcome = co_await connect_tls_upstream(s, t, ex, upstream_h2_allowed(ex));
    if (outcome.error != errc::ok) co_return std::vector<tls::leaf_name>{};
  }
  X509* peer = SSL_get0_peer_certificate(t.upstream->native_handle());
  if (peer == nullptr) co_return std::vector<tls::leaf_name>{};
  co_return tls::subject_alt_names(peer);
}

}  // namespace airlock::proxy
