// An HTTP/2 client's stream over an HTTP/1.1 upstream (h2_connection.hpp): the request written
// as HTTP/1.1 (its body streamed as the client sends it, each piece through the chain), the
// answer read back through the chain's response hooks onto the stream. The upstream is one of
// the connection's idle ones, the CONNECT's own connection, one from the worker's TLS pool, or a
// new one; a reused one the origin closed before answering a bodiless request is replaced once.
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/forward.hpp"
#include "proxy/h2_connection.hpp"
#include "proxy/h2_request.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "tls/contexts.hpp"

#include <nghttp2/nghttp2.h>

namespace airlock::proxy {
namespace asio = boost::asio;
namespace beast = boost::beast;
using core::errc;

namespace {

enum class sent {
  ok,     // the request went out whole
  ended,  // the exchange ended here (answered, or cut)
  stale,  // `retry_if_stale` and the origin had closed the connection: nothing was answered
};

// The request body: taken from the stream as it arrives, each piece shown to the chain's
// observers and written upstream, its bytes given back to the client's window once written.
// `held`: the body already read whole.
template <class Upstream>
asio::awaitable<sent> send_request(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                   Upstream& upstream, http::request<http::buffer_body>& req,
                                   const std::optional<std::string>& held, bool retry_if_stale) {
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
      if (retry_if_stale && forward_detail::closed_by_peer(ec)) co_return sent::stale;
      if (st.closed || c.closing()) {  // the client reset the stream (on_activity closed it)
        rec.status = 0;
        h2_note_undelivered(c, ss, rec);
        co_return sent::ended;
      }
      rec.failed_upstream(errc::upstream_error);
      rec.refuse(errc::upstream_error, core::str_cat("sending request: ", ec.message()));
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return sent::ended;
    }
    co_return sent::ok;
  }
  auto [hec, hn] = co_await http::async_write_header(upstream, sr, use_tuple);
  bool failed = static_cast<bool>(hec);
  std::string piece;
  while (!failed) {
    while (st.body.empty() && !st.body_done)
      if (!co_await await_change(c, ss, limits.idle_timeout)) {
        h2_note_request_cut(c, ss, rec);
        co_await h2_answer(c, ss, rec, limits.idle_timeout);  // a stream still open hears why
        co_return sent::ended;
      }
    piece.swap(st.body);
    st.body.clear();
    const bool last = st.body_done;
    rec.bytes_in += piece.size();
    if (rec.bytes_in > ex.body_limit) {
      rec.refuse(errc::body_too_large, h1::body_limit_detail(ex));
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return sent::ended;
    }
    if (observe && !chain.request_body(piece, last).passes()) {
      co_await h2_answer(c, ss, rec, limits.idle_timeout);
      co_return sent::ended;
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
  if (failed && (st.closed || c.closing())) {
    // The client's stream ended first (reset, or a body that broke its content-length): the
    // proxy closed the origin's connection under the write (h2_connection::on_activity).
    h2_note_request_cut(c, ss, rec);
    co_return sent::ended;
  }
  if (failed) {
    rec.failed_upstream(errc::upstream_error);
    rec.refuse(errc::upstream_error, "sending the request body failed");
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return sent::ended;
  }
  co_return sent::ok;
}

// Gives the upstream connection back to the connection's idle ones as soon as its answer has
// been read whole (before the last bytes reach the client, who may ask again at once), unless
// the origin sent more than its answer (the next request would take that for its own).
void give_back(h2_connection& c, h2_stream_state& ss, std::unique_ptr<tunnel_context>& up) {
  ss.upstream = nullptr;
  if (!up->upstream->nothing_buffered()) return;
  up->upstream_reused = true;
  c.put_upstream(std::move(up));
}

// The origin's answer: head through the chain, then the body piece by piece through the chain's
// response filters onto the stream. The upstream is given back when it may be used again.
// False only when `retry_if_stale` and the origin closed the connection before any byte of an
// answer: nothing was answered, and the request may go again on a new connection.
asio::awaitable<bool> relay_response(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                     std::unique_ptr<tunnel_context>& up, bool head_request,
                                     bool retry_if_stale) {
  auto& upstream = *up->upstream;
  auto& up_buffer = up->upstream_buffer;
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  std::optional<http::response_parser<http::buffer_body>> res_p;
  auto ec = co_await forward_detail::read_final_response_head(upstream, up_buffer, res_p, limits,
                                                              head_request);
  if (!ec && res_p->get().result_int() == 101) ec = http::error::bad_version;
  if (ec) {
    if (retry_if_stale && up_buffer.size() == 0 && forward_detail::closed_by_peer(ec))
      co_return false;
    if (!record_response_failure(rec, ec, c.session().w.shared().draining.load())) {
      h2_note_undelivered(c, ss, rec);
      co_return true;
    }
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return true;
  }
  if (refused_response_framing(rec, res_p->get())) {
    co_await h2_answer(c, ss, rec, limits.idle_timeout);
    co_return true;
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
    co_return true;
  }
  const bool filtered =
      ex.response_has_body && chain.response_body_use() != filters::body_use::none;
  h2_response_head head{status, h2_response_fields(res)};
  if (ex.response_reframed) h2_drop_field(head.fields, "content-length");
  if (!ex.response_has_body) chain.answered();
  if (!filtered || !ex.response_has_body) {
    if (!head.submit(c, ss, rec, ex.response_has_body)) co_return true;
  }
  if (!ex.response_has_body) {
    if (upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0) give_back(c, ss, up);
    co_return true;
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
    if (read_ec == asio::error::operation_aborted) {
      // The client reset the stream (or its connection ended): the proxy closed the origin's
      // connection under the read (h2_connection::on_activity). Not the origin's failure.
      if (!head.sent) rec.status = 0;
      h2_note_undelivered(c, ss, rec);
      co_return true;
    }
    if (read_ec) {
      rec.failed_upstream(read_ec == http::error::body_limit ? errc::response_too_large
                                                             : errc::upstream_error);
      rec.detail = core::str_cat("response body: ", read_ec.message());
      co_await h2_cut_answer(c, ss, rec, head, limits.idle_timeout);
      co_return true;
    }
    co_await download.pace(n);
    std::string_view piece(buf.data(), n);
    if (filtered) {
      filtered_out.clear();
      bool enough = false;
      if (!chain.response_body(piece, last, filtered_out, enough).passes()) {
        co_await h2_cut_answer(c, ss, rec, head, limits.idle_timeout);
        co_return true;
      }
      if (enough) last = true;
      piece = filtered_out;
    }
    if (!head.sent && piece.empty() && !last) continue;  // the head waits with the first bytes
    if (!head.sent && !head.submit(c, ss, rec, true)) co_return true;
    if (last) chain.answered();
    if (last && upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0)
      give_back(c, ss, up);
    const bool pushed = co_await h2_push_output(c, ss, piece, last, limits.idle_timeout);
    rec.bytes_out = ss.stream->out_total;  // what the codec took, not what was queued
    if (!pushed) {
      h2_note_undelivered(c, ss, rec);
      co_return true;
    }
  }
  co_return true;
}

// The connection's HTTP/2 upstream made of `up`'s new TLS connection, when the origin picked
// h2 on it (`up` then empty), else null.
std::shared_ptr<h2_upstream> adopt_if_h2(h2_connection& c, tunnel_context& up,
                                         const policy::model::limits& limits) {
  if (tls::negotiated_alpn(up.upstream->native_handle()) != tls::alpn_h2) return nullptr;
  auto h2up = std::make_shared<h2_upstream>(std::move(*up.upstream), up.upstream_text,
                                            h2_client_limits(limits), limits.idle_timeout);
  up.upstream.reset();
  h2up->start();
  return c.adopt_upstream_h2(std::move(h2up));
}

}  // namespace

asio::awaitable<void> forward_stream(h2_connection& c, h2_stream_state& ss, filters::chain& chain,
                                     http::request<http::buffer_body>& req,
                                     const std::optional<std::string>& held) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& s = c.session();
  const auto& limits = ex.snapshot->limits();
  const bool want_h2 = upstream_h2_allowed(ex);
  const bool head_request = req.method() == http::verb::head;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // The connection's HTTP/2 upstream, when the origin picked h2 for an earlier stream.
    auto h2up = want_h2 ? c.upstream_h2() : nullptr;
    std::unique_ptr<tunnel_context> up;
    if (!h2up) {
      // A second attempt connects anew: the first found its reused connection closed.
      up = c.take_upstream(limits, attempt == 0);
      if (!up) {
        rec.refuse(errc::too_many_connections, upstream_slots_detail(limits));
        co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
      }
      if (!up->upstream) {
        auto outcome = co_await connect_tls_upstream(s, *up, ex, want_h2, attempt == 0);
        if (outcome.error != errc::ok) {
          rec.connect_failed(outcome.error);
          rec.refuse(outcome.error, outcome.detail);
          co_return co_await h2_answer(c, ss, rec, limits.idle_timeout);
        }
        rec.connect_time = outcome.connect_time;
        if (want_h2) h2up = adopt_if_h2(c, *up, limits);
      }
    }
    if (h2up) {
      rec.upstream_protocol = "h2";
      // A request the origin refused unprocessed, on a connection it then closed to new
      // streams (GOAWAY), goes again on the connection's next HTTP/2 upstream.
      auto reconnect = [&c, &s, &ex, &limits]() -> asio::awaitable<h2_reconnected> {
        if (auto current = c.upstream_h2()) co_return h2_reconnected{current};
        if (c.closing()) co_return h2_reconnected{};  // (the client is going: no new upstream)
        auto fresh = c.take_upstream(limits, false);
        if (!fresh)
          co_return h2_reconnected{errc::too_many_connections, upstream_slots_detail(limits)};
        auto outcome = co_await connect_tls_upstream(s, *fresh, ex, true, false);
        if (outcome.error != errc::ok)
          co_return h2_reconnected{outcome.error, std::move(outcome.detail)};
        if (c.closing()) co_return h2_reconnected{};
        auto h2 = adopt_if_h2(c, *fresh, limits);
        if (!h2) c.put_upstream(std::move(fresh));  // HTTP/1.1 this time: kept for the next
        co_return h2_reconnected{std::move(h2)};
      };
      co_return co_await forward_h2_over_h2(c, ss, chain, req, held, *h2up, reconnect);
    }
    rec.upstream = up->upstream_text;
    ss.upstream = up.get();
    // A reused connection the origin closed while it idled: a bodiless request goes again, once.
    const bool retry = attempt == 0 && up->upstream_reused && !ex.has_body;
    const sent how = co_await send_request(c, ss, chain, *up->upstream, req, held, retry);
    bool answered = how == sent::ended;
    if (how == sent::ok) answered = co_await relay_response(c, ss, chain, up, head_request, retry);
    ss.upstream = nullptr;  // (an upstream not given back closes here)
    if (answered) co_return;
  }
}

}  // namespace airlock::proxy
