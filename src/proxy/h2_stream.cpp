// One HTTP/2 request stream as an exchange (h2_connection.hpp): its head into the exchange, the
// chain's head hooks, its body (held whole for a filter, or streamed piece by piece as the
// client's window is given back), credentials, then the request to the origin over HTTP/1.1
// and the answer back through the chain, on this stream only. A refusal is this stream's own
// answer (403/429 with Proxy-Status); the connection's other streams carry on.
#include "core/ascii.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/exchange_record.hpp"
#include "proxy/forward.hpp"
#include "proxy/h2_connection.hpp"
#include "proxy/h2_request.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "proxy/pending_wait.hpp"
#include "tls/contexts.hpp"

#include <nghttp2/nghttp2.h>

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
using core::errc;

namespace {

// Waits for the stream to change (body bytes, its end, its close, room for output) for at most
// `limit`. False on timeout or when the connection is going away.
asio::awaitable<bool> await_change(h2_connection& c, h2_stream_state& ss,
                                   std::chrono::steady_clock::duration limit) {
  const bool changed = co_await ss.changed.wait(limit);
  co_return changed && !c.closing() && !ss.stream->closed;
}

// The request body: taken from the stream as it arrives, each piece shown to the chain's
// observers and written upstream, its bytes given back to the client's window once written.
// `held`: the body already read whole. False when the exchange ended here (answered, or cut).
template <class Upstream>
asio::awaitable<bool> send_request(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                   Upstream& upstream, http::request<http::buffer_body>& req,
                                   const std::optional<std::string>& held) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& st = *ss.stream;
  const auto& limits = ex.snapshot->limits();
  http::request_serializer<http::buffer_body> sr{req};
  auto& b = req.body();
  const bool streamed = !held && ex.has_body;
  const bool observe = chain.request_body_use() != filters::body_use::none;
  const byte_throttle upload{ex.upload};
  set_timeout(upstream, limits.idle_timeout);
  if (!streamed) {
    b.data = held && !held->empty() ? const_cast<char*>(held->data()) : nullptr;
    b.size = held ? held->size() : 0;
    b.more = false;
    if (held) co_await upload.pace(held->size());
    auto [ec, n] = co_await h1::async_write(upstream, sr);
    if (ec && ec != http::error::need_buffer) {
      rec.failed_upstream(errc::upstream_error);
      rec.refuse(errc::upstream_error, core::str_cat("sending request: ", ec.message()));
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return false;
    }
    co_return true;
  }
  auto [hec, hn] = co_await http::async_write_header(upstream, sr, use_tuple);
  bool failed = static_cast<bool>(hec);
  std::string piece;
  while (!failed) {
    while (st.body.empty() && !st.body_done)
      if (!co_await await_change(c, ss, limits.idle_timeout)) co_return false;
    piece.swap(st.body);
    st.body.clear();
    const bool last = st.body_done;
    rec.bytes_in += piece.size();
    if (rec.bytes_in > ex.body_limit) {
      rec.refuse(errc::body_too_large, h1::body_limit_detail(ex));
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return false;
    }
    if (observe && !chain.request_body(piece, last).passes()) {
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return false;
    }
    co_await upload.pace(piece.size());
    b.data = piece.empty() ? nullptr : piece.data();
    b.size = piece.size();
    b.more = !last;
    set_timeout(upstream, limits.idle_timeout);
    auto [ec, n] = co_await h1::async_write(upstream, sr);
    if (ec && ec != http::error::need_buffer) failed = true;
    c.codec().consume(st, piece.size());
    c.kick();
    if (last) break;
  }
  if (failed) {
    rec.failed_upstream(errc::upstream_error);
    rec.refuse(errc::upstream_error, "sending the request body failed");
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return false;
  }
  co_return true;
}

// Gives the upstream connection back to the connection's idle ones as soon as its answer has
// been read whole (before the last bytes reach the client, who may ask again at once), unless
// the origin sent more than its answer (the next request would take that for its own).
void give_back(h2_connection& c, h2_stream_state& ss, std::unique_ptr<tunnel_context>& up) {
  ss.upstream = nullptr;
  if (nothing_buffered(*up->upstream)) c.put_upstream(std::move(up));
}

// The origin's answer: head through the chain, then the body piece by piece through the chain's
// response filters onto the stream. The upstream is given back when it may be used again.
asio::awaitable<void> relay_response(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                     std::unique_ptr<tunnel_context>& up, bool head_request) {
  auto& upstream = *up->upstream;
  auto& up_buffer = up->upstream_buffer;
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  std::optional<http::response_parser<http::buffer_body>> res_p;
  boost::system::error_code ec;
  do {
    forward_detail::prepare_response_parser(res_p, limits, head_request);
    set_timeout(upstream, limits.response_timeout);
    auto [head_ec, rn] = co_await http::async_read_header(upstream, up_buffer, *res_p, use_tuple);
    ec = head_ec;
  } while (!ec && forward_detail::interim_response(res_p->get().result_int()));
  if (!ec && res_p->get().result_int() == 101) ec = http::error::bad_version;
  if (ec) {
    forward_detail::record_response_failure(rec, ec);
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return;
  }
  auto& res = res_p->get();
  const unsigned status = res.result_int();
  rec.status = status;
  ex.response = &res;
  ex.response_has_body = !(head_request || status == 204 || status == 304);
  const bool upstream_keep_alive = res_p->keep_alive();
  strip_hop_by_hop(res);
  if (!chain.response_head().passes()) {
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return;
  }
  const bool filtered =
      ex.response_has_body && chain.response_body_use() != filters::body_use::none;
  auto fields = h2_response_fields(res);
  if (ex.response_reframed) h2_drop_field(fields, "content-length");
  if (!c.codec().submit_response(*ss.stream, status, fields, ex.response_has_body)) co_return;
  c.kick();
  if (!ex.response_has_body) {
    if (upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0) give_back(c, ss, up);
    co_return;
  }

  const byte_throttle download{ex.download};
  std::string buf(h1::relay_buffer_size, '\0');
  std::string filtered_out;
  bool last = false;
  while (!last) {
    h1::prepare_piece(*res_p, buf.data(), buf.size());
    set_timeout(upstream, limits.idle_timeout);
    auto read_ec = co_await h1::read_some_body(upstream, up_buffer, *res_p);
    if (read_ec == http::error::need_buffer) read_ec = {};
    const std::size_t n = buf.size() - res_p->get().body().size;
    last = res_p->is_done();
    if (read_ec) {
      rec.failed_upstream(read_ec == http::error::body_limit ? errc::response_too_large
                                                             : errc::upstream_error);
      rec.detail = core::str_cat("response body: ", read_ec.message());
      c.codec().reset(*ss.stream, NGHTTP2_INTERNAL_ERROR);
      c.kick();
      co_return;
    }
    co_await download.pace(n);
    std::string_view piece(buf.data(), n);
    if (filtered) {
      filtered_out.clear();
      bool enough = false;
      if (!chain.response_body(piece, last, filtered_out, enough).passes()) {
        c.codec().reset(*ss.stream, NGHTTP2_INTERNAL_ERROR);
        c.kick();
        co_return;
      }
      if (enough) last = true;
      piece = filtered_out;
    }
    rec.bytes_out += piece.size();
    if (last && upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0)
      give_back(c, ss, up);
    if (!co_await h2_push_output(c, ss, piece, last, limits.idle_timeout)) co_return;
  }
}

// Sends the request to the origin over one of the connection's HTTP/1.1 upstreams and relays
// the answer back.
asio::awaitable<void> forward_stream(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                     http::request<http::buffer_body>& req,
                                     const std::optional<std::string>& held) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& s = c.session();
  const auto& limits = ex.snapshot->limits();
  const bool want_h2 = upstream_h2_allowed(ex);
  // The connection's HTTP/2 upstream, when the origin picked h2 for an earlier stream.
  auto h2up = want_h2 ? c.upstream_h2() : nullptr;
  std::unique_ptr<tunnel_context> up;
  if (!h2up) {
    up = c.take_upstream();
    if (!up->upstream) {
      auto outcome = co_await connect_tls_upstream(s, *up, ex, want_h2);
      if (outcome.error != errc::ok) {
        rec.connect_failed(outcome.error);
        rec.refuse(outcome.error, outcome.detail);
        co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
      }
      rec.connect_time = outcome.connect_time;
      if (want_h2 && tls::negotiated_alpn(up->upstream->native_handle()) == tls::alpn_h2) {
        h2up = std::make_shared<h2_upstream>(std::move(*up->upstream), up->upstream_text,
                                             h2_client_limits(limits), limits.idle_timeout);
        up->upstream.reset();
        h2up->start();
        c.set_upstream_h2(h2up);
      }
    }
  }
  if (h2up) {
    rec.upstream_protocol = "h2";
    co_return co_await forward_h2_over_h2(c, ss, chain, req, held, *h2up);
  }
  rec.upstream = up->upstream_text;
  ss.upstream = up.get();
  const bool head_request = req.method() == http::verb::head;
  if (co_await send_request(c, ss, chain, *up->upstream, req, held))
    co_await relay_response(c, ss, chain, up, head_request);
  ss.upstream = nullptr;  // (an upstream not given back closes here)
}

// Reads the whole request body (a filter must see all of it before any byte goes on), giving
// the window back as it is held, up to the body limit. False when the exchange ended here.
asio::awaitable<bool> hold_body(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                std::string& body) {
  auto& ex = chain.ex();
  auto& st = *ss.stream;
  const auto idle = ex.snapshot->limits().idle_timeout;
  for (;;) {
    body += st.body;
    c.codec().consume(st, st.body.size());
    st.body.clear();
    c.kick();
    if (body.size() > ex.body_limit) {
      ex.record.refuse(errc::body_too_large, h1::body_limit_detail(ex));
      break;
    }
    if (st.body_done) {
      ex.record.bytes_in = body.size();
      if (chain.request_body(body, true).passes()) co_return true;
      break;
    }
    if (!co_await await_change(c, ss, idle)) co_return false;
  }
  co_await h2_answer(c, ss, ex.record, idle);
  co_return false;
}

}  // namespace

// Queues `data` on the stream's output, waiting while the client's window keeps the output
// above the stream's buffer. False when the stream or the connection ended, or the client did
// not open its window within the idle timeout (a zero-window stall: the stream is reset).
asio::awaitable<bool> h2_push_output(h2_connection& c, h2_stream_state& ss, std::string_view data,
                                     bool last, std::chrono::milliseconds idle) {
  auto& st = *ss.stream;
  if (st.closed) co_return false;
  st.out.append(data);
  st.out_end = last;
  c.codec().resume(st);
  c.kick();
  while (!st.closed && (st.out_pending() > c.stream_buffer() || (last && st.out_pending() > 0))) {
    if (!co_await await_change(c, ss, idle)) {
      if (!st.closed && !c.closing()) {
        c.codec().reset(st, NGHTTP2_CANCEL);
        c.kick();
      }
      co_return false;
    }
  }
  co_return !st.closed;
}

// The proxy's own answer (the refusal or failure in the record) on this stream.
asio::awaitable<void> h2_answer(h2_connection& c, h2_stream_state& ss,
                                filters::exchange_record& rec, std::chrono::milliseconds idle) {
  const bool grpc = ss.grpc;
  auto res = make_answer(rec.reason, rec.detail, 11, true);
  if (rec.retry_after > 0) res.set(http::field::retry_after, std::to_string(rec.retry_after));
  rec.status = res.result_int();
  if (grpc) {
    // A gRPC client shows a status, not a transport error: trailers-only, HTTP 200.
    auto line = res.body();
    while (!line.empty() && line.back() == '\n')
      line.pop_back();
    c.codec().submit_response(*ss.stream, 200, grpc_answer_fields(res, rec.status, line), false);
    rec.status = 200;
    c.kick();
    co_return;
  }
  if (!c.codec().submit_response(*ss.stream, res.result_int(), h2_response_fields(res), true))
    co_return;
  co_await h2_push_output(c, ss, res.body(), true, idle);
}

asio::awaitable<void> serve_h2_stream(h2_connection& c, h2_stream_state& ss) {
  auto& s = c.session();
  auto& t = c.tunnel();
  auto& shared = s.w.shared();
  const auto active = shared.current_active();
  const auto& snap = active->snapshot();
  const auto& limits = snap.limits();
  ++s.requests;
  recorder recorded(s.w, s.client_text, snap.version());
  auto& ex = recorded.ex;
  auto& rec = ex.record;
  ex.snapshot = &snap;
  rec.protocol = "h2";
  rec.scheme = "https";
  http::request<http::buffer_body> req;
  ex.request = &req;
  // 1. The head, as an HTTP/1.1 request inside the tunnel would fill the exchange.
  auto bad = h2_parse_request(*ss.stream, t.target, limits, req, ex);
  ss.grpc = is_grpc(req);
  if (bad) {
    rec.refuse(bad->reason, bad->detail);
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
  if (shared.draining.load()) {
    rec.refuse(errc::shutting_down, "proxy is shutting down; retry");
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
  // 2. The tunnel's agent.
  ex.agent = snap.find_agent(t.agent);
  if (!ex.agent) {
    rec.refuse(errc::auth_required, "agent no longer in the policy");
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
  rec.agent = ex.agent->name;
  if (s.relay_binary) ex.binary = rec.binary = &*s.relay_binary;
  // 3. The chain's head hooks.
  filters::chain chain(active->pipeline->factories(), ex);
  auto decided = chain.request_head();
  while (decided.waits()) {
    // Gone: the client reset the stream or closed the connection. (Named, not a temporary in
    // the co_await: GCC 12 mishandles those.)
    const std::function<bool()> gone = [&c, &ss] { return ss.stream->closed || c.closing(); };
    decided = chain.resume(co_await await_pending(*decided.waiting, limits.idle_timeout, gone));
  }
  if (!decided.passes()) co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  // 4. A body a filter must see whole, then credentials, then the head for the upstream.
  std::optional<std::string> held;
  if (ex.has_body && chain.request_body_use() == filters::body_use::whole) {
    held.emplace();
    if (!co_await hold_body(c, ss, chain, *held)) co_return;
  }
  if (!chain.forward().passes()) co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  h2_rewrite_for_upstream(req, ex, held ? &*held : nullptr);
  if (ss.stream->closed) {
    // The client reset the stream while it was decided: nothing goes upstream.
    rec.refuse(errc::bad_request, "the client reset the stream");
    co_return;
  }
  // 5. Upstream and the answer.
  co_await forward_stream(c, ss, chain, req, held);
  // A client still sending a body nobody reads is told to stop (RFC 9113 section 8.1).
  if (!ss.stream->closed && !ss.stream->body_done) {
    c.codec().reset(*ss.stream, NGHTTP2_NO_ERROR);
    c.kick();
  }
}

}  // namespace airlock::proxy
