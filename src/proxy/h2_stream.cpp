// One HTTP/2 request stream as an exchange (h2_connection.hpp): its head into the exchange, the
// chain's head hooks, its body (held whole for a filter, or streamed piece by piece as the
// client's window is given back), credentials, then the request to the origin over HTTP/1.1
// and the answer back through the chain, on this stream only. A refusal is this stream's own
// answer (403/429 with Proxy-Status); the connection's other streams carry on.
#include "core/ascii.hpp"
#include "core/str_cat.hpp"
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

asio::awaitable<bool> await_change(h2_connection& c, h2_stream_state& ss,
                                   std::chrono::steady_clock::duration limit) {
  const bool changed = co_await ss.changed.wait(limit);
  co_return changed && !c.closing() && !ss.stream->closed;
}

namespace {

// A stream's held body bytes, counted on its connection (h2_connection::claim_held) until the
// stream's exchange ends.
struct held_claim {
  h2_connection& c;
  std::size_t bytes = 0;
  ~held_claim() { c.release_held(bytes); }
};

// Reads the whole request body (a filter must see all of it before any byte goes on), giving
// the window back as it is held, up to the body limit, and with the bodies the connection's
// other streams hold, up to the larger of limits.body_bytes and this one's limit: an HTTP/2
// connection holds no more than an HTTP/1.1 one could. False when the exchange ended here.
asio::awaitable<bool> hold_body(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                std::string& body, held_claim& claim) {
  auto& ex = chain.ex();
  auto& st = *ss.stream;
  const auto& limits = ex.snapshot->limits();
  const auto idle = limits.idle_timeout;
  const std::uint64_t cap = std::max(limits.body_bytes, ex.body_limit);
  for (;;) {
    if (!c.claim_held(st.body.size(), cap)) {
      ex.record.refuse(
          errc::body_too_large,
          core::str_cat("the request bodies this HTTP/2 connection's streams hold whole for "
                        "inspection would pass ",
                        cap, " bytes (limits.body_bytes or the rule's): send fewer at once"));
      break;
    }
    claim.bytes += st.body.size();
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
    if (!co_await await_change(c, ss, idle)) {
      h2_note_request_cut(c, ss, ex.record);
      break;
    }
  }
  co_await h2_answer(c, ss, ex.record, idle);
  co_return false;
}

}  // namespace

// Queues `data` on the stream's output, waiting while the client's window keeps the output
// above the stream's buffer. False when the stream or the connection ended before all of it
// went, or the client did not open its window within the idle timeout (a zero-window stall:
// the stream is reset).
asio::awaitable<bool> h2_push_output(h2_connection& c, h2_stream_state& ss, std::string_view data,
                                     bool last, std::chrono::milliseconds idle) {
  auto& st = *ss.stream;
  if (st.closed) co_return false;
  st.out.append(data);
  st.out_end = last;
  c.codec().resume(st);
  c.kick();
  // The stream closes normally as its last byte goes with END_STREAM (the client had ended its
  // side): that is delivery, not an end before it.
  const auto delivered_whole = [&] {
    return st.closed && last && st.out_pending() == 0 && st.close_error == NGHTTP2_NO_ERROR;
  };
  while (!st.closed && (st.out_pending() > c.stream_buffer() || (last && st.out_pending() > 0))) {
    if (!co_await await_change(c, ss, idle)) {
      if (delivered_whole()) co_return true;
      if (!st.closed && !c.closing()) {
        c.codec().reset(st, NGHTTP2_CANCEL);
        c.kick();
      }
      co_return false;
    }
  }
  co_return !st.closed || delivered_whole();
}

void h2_note_undelivered(h2_connection& c, const h2_stream_state& ss,
                         filters::exchange_record& rec) {
  const auto& st = *ss.stream;
  std::string why;
  if (st.closed && st.close_error != NGHTTP2_NO_ERROR && !c.closing())
    why =
        core::str_cat("the client reset the stream (", nghttp2_http2_strerror(st.close_error), ')');
  else if (c.closing() || st.closed)
    why = "the connection or the stream ended";
  else
    why = "the client's window stayed shut past limits.idle_timeout";
  std::string what =
      core::str_cat("response not delivered: ", why, " after ", st.out_total, " body bytes");
  rec.detail = rec.detail.empty() ? std::move(what) : core::str_cat(rec.detail, "; ", what);
}

void h2_note_request_cut(h2_connection& c, const h2_stream_state& ss,
                         filters::exchange_record& rec) {
  const auto& st = *ss.stream;
  std::string why;
  if (st.closed && st.close_error == NGHTTP2_PROTOCOL_ERROR)
    why =
        "the stream was malformed (PROTOCOL_ERROR: its DATA did not match its content-length, "
        "or a frame broke RFC 9113 section 8.1)";
  else if (st.closed && st.close_error != NGHTTP2_NO_ERROR)
    why =
        core::str_cat("the client reset the stream (", nghttp2_http2_strerror(st.close_error), ')');
  else if (st.closed || c.closing())
    why = "the connection or the stream ended";
  else
    why = "the client sent nothing for limits.idle_timeout";
  rec.refuse(errc::bad_request,
             core::str_cat("request body: ", why, " after ", rec.bytes_in, " bytes"));
}

// The proxy's own answer (the refusal or failure in the record) on this stream.
asio::awaitable<void> h2_answer(h2_connection& c, h2_stream_state& ss,
                                filters::exchange_record& rec, std::chrono::milliseconds idle) {
  if (rec.chain) rec.chain->answered();
  const bool grpc = ss.grpc;
  if (ss.stream->closed || c.closing()) {
    rec.status = 0;  // the stream is gone: the client got its reset, not an answer
    co_return;
  }
  auto res = make_answer(rec.reason, rec.detail, 11, true);
  if (rec.retry_after > 0) res.set(http::field::retry_after, std::to_string(rec.retry_after));
  rec.status = res.result_int();
  if (grpc) {
    // A gRPC client shows a status, not a transport error: trailers-only, HTTP 200.
    c.codec().submit_response(*ss.stream, 200, grpc_answer_fields(res), false);
    rec.status = 200;
    c.kick();
    co_return;
  }
  if (!c.codec().submit_response(*ss.stream, res.result_int(), h2_response_fields(res), true))
    co_return;
  co_await h2_push_output(c, ss, res.body(), true, idle);
}

bool h2_response_head::submit(h2_connection& c, h2_stream_state& ss, filters::exchange_record& rec,
                              bool body) {
  sent = true;
  if (!c.codec().submit_response(*ss.stream, status, fields, body)) {
    rec.status = 0;  // the stream had closed: nothing reached the client
    h2_note_undelivered(c, ss, rec);
    return false;
  }
  c.kick();
  return true;
}

namespace {
// The call is gRPC and so is its answer (200, a gRPC Content-Type): what was sent of it is
// whole messages or part of one, which trailers with a status end as a failed call. Any other
// answer cut is reset, so that the client sees it incomplete.
bool grpc_answer_under_way(const h2_stream_state& ss, const h2_response_head& head) {
  if (!ss.grpc || head.status != 200) return false;
  for (const auto& [name, value] : head.fields)
    if (name == "content-type") return is_grpc_type(value);
  return false;
}
}  // namespace

asio::awaitable<void> h2_cut_answer(h2_connection& c, h2_stream_state& ss,
                                    filters::exchange_record& rec, const h2_response_head& head,
                                    std::chrono::milliseconds idle) {
  if (!head.sent) co_return co_await h2_answer(c, ss, rec, idle);
  if (rec.chain) rec.chain->answered();
  if (grpc_answer_under_way(ss, head) && !ss.stream->closed && !c.closing()) {
    // A gRPC answer under way ends with trailers that say why (grpc-status, grpc-message): a
    // client shows them as the call's status, where a reset reads as INTERNAL and nothing more.
    ss.stream->out_trailers =
        grpc_answer_fields(make_answer(rec.reason, rec.detail, 11, true), false);
    const bool pushed = co_await h2_push_output(c, ss, std::string_view(), true, idle);
    if (!pushed) h2_note_undelivered(c, ss, rec);
    rec.bytes_out = ss.stream->out_total;
    co_return;
  }
  c.codec().reset(*ss.stream, NGHTTP2_INTERNAL_ERROR);
  c.kick();
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
  ex.tunnel_rule = t.rule;
  ex.streams_alongside = c.streams_running() - 1;  // for `concurrent` (rate_limit_filter.cpp)
  if (s.relay_binary) ex.binary = rec.binary = &*s.relay_binary;
  if (shared.audit_refuses(snap)) {  // fail closed, as session.cpp
    rec.refuse(errc::audit_unavailable, "the audit log cannot be written; retry later");
    co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
  }
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
  held_claim claim{c};
  if (ex.has_body && chain.request_body_use() == filters::body_use::whole) {
    held.emplace();
    if (!co_await hold_body(c, ss, chain, *held, claim)) co_return;
    if (ex.rewritten_body) *held = std::move(*ex.rewritten_body);  // DLP's redact
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
