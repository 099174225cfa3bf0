// An HTTP/2 client's stream over the connection's HTTP/2 upstream (h2_connection.hpp,
// forward_h2_over_h2): the request body and the answer move at once, each way with its own
// flow control (a gRPC bidirectional call sends and receives in turns), each piece through the
// chain as on every other path, trailers too (chain::trailers).
#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"
#include "proxy/byte_throttle.hpp"
#include "proxy/h1_request.hpp"
#include "proxy/h2_connection.hpp"
#include "proxy/h2_request.hpp"
#include "proxy/h2_upstream_exchange.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <nghttp2/nghttp2.h>

#include <utility>

namespace airlock::proxy {
namespace asio = boost::asio;
using core::errc;

namespace {

// What the two halves tell each other.
struct bridge {
  bool request_refused = false;  // the request half refused or failed (recorded)
  bool response_over = false;    // the answer is over (or failed): the request half stops
  // The request half's refusal, kept: the origin's stream it cut must not be recorded over it.
  core::errc reason = core::errc::ok;
  std::string detail;

  void refused(filters::exchange_record& rec, h2_upstream_call& call) {
    request_refused = true;
    reason = rec.reason;
    detail = rec.detail;
    call.reset(NGHTTP2_CANCEL);
  }
  void restore(filters::exchange_record& rec) const {
    rec.upstream_failed = false;
    rec.refuse(reason, detail);
  }
};

// Trailers as they may go on, through the chain; false when a filter refused them (recorded).
bool pass_trailers(filters::chain& chain, const h2::header_list& in, bool response,
                   h2::header_list& out) {
  out.clear();
  const auto allowed = h2_trailers_to_forward(in);
  if (allowed.empty()) return true;
  http::fields fields;
  for (const auto& [name, value] : allowed)
    fields.insert(name, value);
  if (!chain.trailers(fields, response).passes()) return false;
  out = h2_response_fields(fields);
  return true;
}

// The request half: the client's body bytes (and trailers) to the origin as they come, each
// piece shown to the chain's observers first; the client's window given back as they go on.
asio::awaitable<void> pump_request(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                   h2_upstream_call& call, bridge& b) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& st = *ss.stream;
  const auto idle = ex.snapshot->limits().idle_timeout;
  const bool observe = chain.request_body_use() != filters::body_use::none;
  const byte_throttle upload{ex.upload};
  std::string piece;
  h2::header_list trailers;
  for (;;) {
    while (st.body.empty() && !st.body_done && !st.closed && !b.response_over && !c.closing()) {
      if (!co_await ss.changed.wait(idle) && st.body.empty() && !st.body_done) {
        if (b.response_over) co_return;
        h2_note_request_cut(c, ss, rec);
        b.refused(rec, call);
        co_return;
      }
    }
    if (b.response_over) co_return;
    if (c.closing()) {
      if (!st.body_done) h2_note_request_cut(c, ss, rec);
      co_return;
    }
    if (st.closed && !st.body_done) {
      h2_note_request_cut(c, ss, rec);
      call.reset(NGHTTP2_CANCEL);  // the client reset its stream: so is the origin's
      co_return;
    }
    piece.swap(st.body);
    st.body.clear();
    const bool last = st.body_done;
    rec.bytes_in += piece.size();
    bool ok = true;
    if (rec.bytes_in > ex.body_limit) {
      rec.refuse(errc::body_too_large, h1::body_limit_detail(ex));
      ok = false;
    }
    if (ok && observe) ok = chain.request_body(piece, last).passes();
    if (ok && last) ok = pass_trailers(chain, st.trailers, false, trailers);
    if (!ok) {
      b.refused(rec, call);
      co_return;
    }
    co_await upload.pace(piece.size());
    const bool pushed = co_await call.push(piece, last, idle, last ? &trailers : nullptr);
    c.codec().consume(st, piece.size());
    c.kick();
    if (!pushed || last) co_return;
  }
}

// The answer half: head through the chain, body pieces through the response filters onto the
// client's stream, the origin's trailers after them.
asio::awaitable<void> relay_answer(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                   h2_upstream_call& call, bridge& b, bool head_request) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  struct over {
    bridge& b;
    h2_stream_state& ss;
    ~over() {
      b.response_over = true;
      ss.changed.notify();
    }
  } mark{b, ss};
  // The client reset its stream or its connection ended (a flood's GOAWAY included): the proxy
  // cancelled the origin's stream itself, which is not the origin's failure. The record keeps
  // the decision as made and says the answer was not delivered.
  const auto decided = std::pair{rec.reason, rec.detail};
  const auto client_ended = [&] {
    if (!ss.stream->closed && !c.closing()) return false;
    rec.upstream_failed = false;
    rec.refuse(decided.first, decided.second);
    h2_note_undelivered(c, ss, rec);
    return true;
  };
  if (!co_await await_h2_head(call, rec, limits)) {
    if (b.request_refused) b.restore(rec);  // the refusal stands, not the stream it cut
    if (!b.request_refused && client_ended()) {
      rec.status = 0;
      co_return;
    }
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
  auto& st = *call.stream;
  http::response<http::buffer_body> res;
  h2_fill_response(st.headers, res);
  const unsigned status = res.result_int();
  rec.status = status;
  ex.response = &res;
  ex.response_has_body = !(head_request || status == 204 || status == 304);
  if (!chain.response_head().passes())
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  const bool filtered =
      ex.response_has_body && chain.response_body_use() != filters::body_use::none;
  h2_response_head head{status, h2_response_fields(res)};
  if (ex.response_reframed) h2_drop_field(head.fields, "content-length");
  // A gRPC answer with trailers only (HEADERS with END_STREAM) is one frame: no DATA, but its
  // status in the head; an answer with trailers needs the body path even when it is empty.
  const bool body_follows =
      ex.response_has_body && !(st.body_done && st.body.empty() && st.trailers.empty());
  if (!body_follows) chain.answered();
  if (!filtered || !body_follows) {
    if (!head.submit(c, ss, rec, body_follows) || !body_follows) co_return;
  }
  const byte_throttle download{ex.download};
  std::uint64_t total = 0;
  std::string piece, out;
  for (bool last = false; !last;) {
    const auto got = co_await next_h2_piece(call, piece, rec, limits, total);
    if (b.request_refused) b.restore(rec);
    if (got == h2_piece::failed && !b.request_refused && client_ended()) {
      if (!head.sent) rec.status = 0;
      co_return;
    }
    if (got == h2_piece::failed || b.request_refused)
      co_return co_await h2_cut_answer(c, ss, rec, head, limits.idle_timeout);
    last = got == h2_piece::last;
    co_await download.pace(piece.size());
    std::string_view data = piece;
    if (filtered) {
      out.clear();
      bool enough = false;
      if (!chain.response_body(piece, last, out, enough).passes())
        co_return co_await h2_cut_answer(c, ss, rec, head, limits.idle_timeout);
      if (enough) last = true;
      data = out;
    }
    if (last && !pass_trailers(chain, st.trailers, true, ss.stream->out_trailers))
      co_return co_await h2_cut_answer(c, ss, rec, head, limits.idle_timeout);
    if (!head.sent && (data.empty() && !last)) {
      call.consume(piece.size());
      continue;  // nothing released yet: the head waits with it
    }
    if (!head.sent && !head.submit(c, ss, rec, true)) co_return;
    if (last) chain.answered();
    const bool pushed = co_await h2_push_output(c, ss, data, last, limits.idle_timeout);
    rec.bytes_out = ss.stream->out_total;  // what the codec took, not what was queued
    call.consume(piece.size());
    if (!pushed) {
      h2_note_undelivered(c, ss, rec);
      co_return;
    }
  }
}

}  // namespace

asio::awaitable<void> forward_h2_over_h2(h2_connection& c, h2_stream_state& ss,
                                         filters::chain& chain,
                                         const http::request<http::buffer_body>& req,
                                         const std::optional<std::string>& held, h2_upstream& up,
                                         h2_reconnect reconnect) {
  using namespace asio::experimental::awaitable_operators;
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  rec.upstream = up.text();
  const bool has_body = held ? !held->empty() || !ss.stream->trailers.empty() : ex.has_body;
  auto call = co_await up.open(h2_request_fields(req), has_body, limits.connect_timeout,
                               std::move(reconnect));
  if (!call) {
    rec.failed_upstream(errc::upstream_error);
    rec.refuse(errc::upstream_error, core::str_cat("HTTP/2 origin takes no more streams",
                                                   up.error().empty() ? "" : ": ", up.error()));
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
  ss.call = call.get();
  struct detach {
    h2_stream_state& ss;
    ~detach() { ss.call = nullptr; }
  } detached{ss};
  bridge b;
  const bool head_request = req.method() == http::verb::head;
  if (held && has_body) {
    h2::header_list trailers;
    if (!pass_trailers(chain, ss.stream->trailers, false, trailers))
      co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_await byte_throttle{ex.upload}.pace(held->size());
    co_await call->push(*held, true, limits.idle_timeout, &trailers);
  }
  if (has_body && !held)
    co_await (pump_request(c, ss, chain, *call, b) &&
              relay_answer(c, ss, chain, *call, b, head_request));
  else
    co_await relay_answer(c, ss, chain, *call, b, head_request);
}

}  // namespace airlock::proxy
