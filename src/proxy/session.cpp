// One client connection, read top to bottom as the pipeline (DESIGN.md): read the head →
// identify the agent → the filter chain (decide, rate, validate, credentials) → connect or
// reuse an upstream → forward, the response through the chain (redaction) → record. A CONNECT
// leaves the HTTP loop for its tunnel (tunnel_session.cpp): opaque, or its requests (intercepted
// TLS or plain HTTP) come back here, each an exchange of its own through the same steps.
#include "proxy/session.hpp"

#include <iterator>
#include <type_traits>
#include <utility>

#include "core/ascii.hpp"
#include "filters/chain.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/exchange_record.hpp"
#include "proxy/exchange_upstream.hpp"
#include "proxy/forward.hpp"
#include "proxy/h1_exchange_steps.hpp"
#include "proxy/pending_wait.hpp"
#include "proxy/session_context.hpp"
#include "proxy/tunnel_session.hpp"
#include "telemetry/metrics.hpp"
#include "tls/contexts.hpp"

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using core::errc;

namespace {

// Who is asking, into the exchange: inside a tunnel, the agent that opened it; on a relay
// connection, the agent the launcher named, whatever the request says of itself; otherwise
// credentials, then the source address. False (the refusal recorded) when nobody is.
bool identify(const session_context& s, const tunnel_context* tunnel, const policy::snapshot& snap,
              const http::request_header<>& req, filters::exchange& ex) {
  policy::identity id;
  const auto [auth, auth_end] = req.equal_range(http::field::proxy_authorization);
  if (!tunnel && s.relay_agent.empty() && auth != auth_end &&
      (std::next(auth) != auth_end || core::trim_ows(auth->value()).empty())) {
    // RFC 9110 section 11.7.2: one set of credentials for the proxy. An empty header or a
    // second one is not "no credentials" (the source address or the default agent would
    // answer for it) and not "the first one" (a hop after us could read the other): 407.
    id.detail = std::next(auth) != auth_end ? "more than one Proxy-Authorization header"
                                            : "empty Proxy-Authorization header";
  } else if (!tunnel) {
    id = snap.identify(s.relay_agent, req[http::field::proxy_authorization],
                       s.client_endpoint.address());
  } else if (!(id.agent = snap.find_agent(tunnel->agent))) {
    id.detail = "agent no longer in the policy";
  }
  if (!id.agent) {
    ex.record.refuse(errc::auth_required, id.detail);
    return false;
  }
  ex.agent = id.agent;
  ex.record.agent = id.agent->name;
  // Only the relay's word names a program; a direct client never has one (fail closed).
  if (s.relay_binary) ex.binary = ex.record.binary = &*s.relay_binary;
  return true;
}

// What forwarding needs to know of the request, once the chain let it go on.
forward_params forward_params_for(http::request<http::buffer_body>& req, filters::exchange& ex,
                                  bool expect_continue, const std::optional<std::string>& held) {
  forward_params fp;
  fp.version = req.version();
  fp.client_keep_alive = req.keep_alive();
  fp.expect_continue = expect_continue && !held;
  fp.head = req.method() == http::verb::head;
  fp.body = held ? &*held : nullptr;
  fp.upgrade = h1::rewrite_for_upstream(req, ex);
  return fp;
}

// How long a session waits for the first byte of its next request, under the policy in force.
std::chrono::milliseconds wait_limit(const session_context& s) {
  const auto active = s.w.shared().current_active();
  const auto& limits = active->snapshot().limits();
  return s.requests == 0 ? limits.head_timeout : limits.idle_timeout;
}

// One request/response exchange: on a plain client connection (tunnel == nullptr, targets in
// absolute form) or inside an intercepted tunnel (origin-form targets for the CONNECT host).
// Returns whether the client connection may carry another request.
template <class Client>
asio::awaitable<bool> serve_exchange(session_context& s, Client& client, tunnel_context* tunnel) {
  auto& shared = s.w.shared();
  // 1. The first byte of the head (a new connection must start within head_timeout; a kept-alive
  // one may idle), then the rest of it, bounded in size and time.
  if (s.buffer.size() == 0) {
    set_timeout(client, wait_limit(s));
    auto [ec, n] = co_await client.async_read_some(s.buffer.prepare(4096), use_tuple);
    s.buffer.commit(n);
    if (ec || n == 0) co_return false;
  }
  // The policy this exchange runs under, from its first byte to its record (a reload while the
  // connection idled applies to it).
  const auto active = shared.current_active();
  const auto& snap = active->snapshot();
  const auto& limits = snap.limits();
  ++s.requests;
  s.entry->idle = false;
  recorder recorded(s.w, s.client_text, snap.version());
  auto& ex = recorded.ex;
  auto& rec = ex.record;
  ex.snapshot = &snap;
  if (tunnel) {
    rec.scheme = tunnel->plain ? "http" : "https";
    ex.tunnel_plain = tunnel->plain;
    ex.tunnel_rule = tunnel->rule;
  }
  h1::request_parser req_p;
  if (auto ended = co_await h1::read_request_head(client, s.buffer, req_p, limits, rec))
    co_return *ended;
  if constexpr (std::is_same_v<Client, tls_client>) {
    // An answer is next, whatever it is: the TLS 1.3 session ticket goes out with it.
    if (std::exchange(tunnel->ticket_due, false)) tls::queue_session_ticket(client.native_handle());
  }
  auto& req = req_p.get();
  ex.request = &req;
  const unsigned version = req.version();
  if (shared.draining.load()) {
    // Shutting down: nothing new starts, even on a connection accepted just before.
    rec.refuse(errc::shutting_down, "proxy is shutting down; retry");
    co_return co_await send_answer(client, rec, version, false);
  }
  // 2. The target and framing.
  if (auto bad = h1::parse_request(req_p, tunnel ? &tunnel->target : nullptr, limits, ex)) {
    rec.refuse(bad->reason, bad->detail);
    // A refused request whose body we have not read ends the connection: without reading the
    // body (which we will not forward) we cannot know where the next request starts.
    co_return co_await send_answer(client, rec, version,
                                   bad->may_keep_alive && !ex.has_body && req.keep_alive());
  }
  // A refused CONNECT ends the connection: what follows it (a relay sends the tunnel's first
  // bytes with it) is not a request, and must not be read, answered and recorded as one.
  const bool keep_after_refusal =
      !ex.has_body && !ex.connect && req.keep_alive() && !shared.draining.load();

  // 3. Who is asking.
  if (!identify(s, tunnel, snap, req, ex))
    co_return co_await send_answer(client, rec, version, keep_after_refusal && !tunnel);
  if (shared.audit_refuses(snap)) {
    // Fail closed: nothing happens that the audit trail cannot record. (This refusal's own
    // record waits in memory with the others.) A kept-alive connection's next request may
    // find the log writable again.
    rec.refuse(errc::audit_unavailable, "the audit log cannot be written; retry later");
    co_return co_await send_answer(client, rec, version, keep_after_refusal);
  }

  // 4. The chain: placeholders, decision, rate limits, required placeholders, validation.
  filters::chain chain(active->pipeline->factories(), ex);
  // (Inline, not a coroutine of its own: a frame per request costs more than the wait that is
  // almost never there.)
  auto decided = chain.request_head();
  while (decided.waits()) {
    // (A named function, not a temporary in the co_await: GCC 12 mishandles those.)
    const std::function<bool()> gone = [fd = s.client.socket().native_handle()] {
      return client_closed(fd);
    };
    decided = chain.resume(co_await await_pending(*decided.waiting, limits.idle_timeout, gone));
  }
  if (!decided.passes()) co_return co_await send_answer(client, rec, version, keep_after_refusal);
  if (ex.connect) {
    // The tunnel's requests, if it carries any, come back here one by one.
    co_await serve_connect(s, ex, *active,
                           {&serve_exchange<tls_client>, &serve_exchange<beast::tcp_stream>});
    co_return false;
  }

  // 5. A body a filter must see whole is read (at most body_limit bytes), then checked:
  // nothing of it reaches the origin unless all of it passes.
  req_p.body_limit(ex.body_limit);
  std::optional<std::string> held_body;
  const bool expect_continue = h1::expects_continue(req);
  if (chain.request_body_use() == filters::body_use::whole) {
    held_body.emplace();
    if (auto ended = co_await h1::hold_whole_body(s, client, req_p, chain, *held_body))
      co_return *ended;
  }
  // 6. Credentials go in last, then the head is rewritten for the upstream.
  if (!chain.forward().passes())
    co_return co_await send_answer(client, rec, version, keep_after_refusal);
  auto fp = forward_params_for(req, ex, expect_continue, held_body);

  // 7. Upstream and forwarding: inside a tunnel (the client speaks TLS) its TLS upstream, else a
  // pooled or new connection.
  if constexpr (std::is_same_v<Client, tls_client>)
    co_return co_await forward_in_tunnel(s, client, *tunnel, ex, chain, req_p, fp,
                                         keep_after_refusal);
  else
    co_return co_await forward_plain(s, ex, chain, req_p, fp, keep_after_refusal);
}

}  // namespace

asio::awaitable<void> serve_connection(worker& w, tcp::socket socket, tcp::endpoint endpoint,
                                       std::string relay_agent,
                                       std::optional<net::peer_binary> relay_binary) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);  // fails harmlessly on a Unix socket
  session_context s{w,
                    beast::tcp_stream(std::move(socket)),
                    endpoint,
                    to_string(endpoint),
                    {},
                    {},
                    0,
                    std::move(relay_agent),
                    std::move(relay_binary)};
  s.entry = w.add_session(&s.client.socket());
  struct unregister {
    worker& w;
    std::list<session_entry>::iterator it;
    ~unregister() { w.remove_session(it); }
  } guard{w, s.entry};

  auto* metrics = w.shared().metrics;
  if (metrics) metrics->connection_opened();
  for (;;) {
    s.entry->idle = true;
    if (w.shared().draining.load()) break;
    if (!co_await serve_exchange(s, s.client, nullptr)) break;
    // Do not let an idle connection keep a large buffer alive.
    if (s.buffer.size() == 0 && s.buffer.capacity() > 16 * 1024) s.buffer.shrink_to_fit();
  }
  if (metrics) metrics->connection_closed();
  if (s.response_cut) {
    // An abortive close (SO_LINGER with a zero timeout: the close sends a TCP RST, socket(7)):
    // for a close-delimited body, a FIN would read as its complete end.
    s.client.socket().set_option(tcp::socket::linger(true, 0), ec);
  } else {
    s.client.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
  s.client.close();
}

}  // namespace airlock::proxy
