// An HTTP/1.1 client's request over an HTTP/2 upstream (h2_upstream_exchange.hpp): the body up
// piece by piece (each piece shown to the chain's observers first), the answer back through the
// chain's response hooks, framed for HTTP/1.1: the origin's Content-Length when the body is
// passed on unchanged, else chunked (trailers in the last chunk), or close-delimited for an
// HTTP/1.0 client.
#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"
#include "proxy/h1_body.hpp"
#include "proxy/h2_upstream_exchange.hpp"
#include "proxy/hop_by_hop.hpp"

#include <boost/beast/http/chunk_encode.hpp>

#include <nghttp2/nghttp2.h>

namespace airlock::proxy {
namespace asio = boost::asio;
using core::errc;

namespace {

// The request body: held whole (`fp.body`), or read from the client piece by piece. False when
// the exchange ended here (the failure recorded; answered by the caller).
asio::awaitable<bool> send_body(session_context& s, tls_client& client, h2_upstream_call& call,
                                filters::exchange& ex, filters::chain& chain,
                                h1::request_parser& req_p, const forward_params& fp) {
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  const byte_throttle upload{ex.upload};
  if (fp.body) {
    co_await upload.pace(fp.body->size());
    rec.bytes_in = fp.body->size();
    if (co_await call.push(*fp.body, true, limits.idle_timeout)) co_return true;
  } else {
    const bool observe = chain.request_body_use() != filters::body_use::none;
    auto buf = s.w.borrow_buffer();
    const std::size_t size = upload.piece(buf.size());
    auto& b = req_p.get().body();
    while (!req_p.is_done()) {
      h1::prepare_piece(req_p, buf.data(), size);
      set_timeout(client, limits.idle_timeout);
      auto ec = co_await h1::read_some_body(client, s.buffer, req_p);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        if (ec == http::error::body_limit)
          rec.refuse(errc::body_too_large, h1::body_limit_detail(ex));
        else
          rec.refuse(errc::bad_request, core::str_cat("reading request body: ", ec.message()));
        co_return false;
      }
      const std::string_view piece(buf.data(), size - b.size);
      const bool last = req_p.is_done();
      if (piece.empty() && !last) continue;
      if (observe && !chain.request_body(piece, last).passes()) co_return false;
      co_await upload.pace(piece.size());
      rec.bytes_in += piece.size();
      if (!co_await call.push(piece, last, limits.idle_timeout)) break;
    }
    if (req_p.is_done() && !call.stream->closed) co_return true;
  }
  // The origin may have answered (and ended the stream) before it took the whole body.
  if (call.stream->head_done) co_return true;
  if (record_renewal_failure(call, rec)) co_return false;
  rec.failed_upstream(errc::upstream_error);
  rec.refuse(errc::upstream_error, "sending request body: the HTTP/2 stream ended");
  co_return false;
}

// Writes `data` as it should go: one chunk, or raw bytes. The write's error.
asio::awaitable<boost::system::error_code> write_piece(tls_client& client, std::string_view data,
                                                       bool chunked,
                                                       std::chrono::milliseconds idle) {
  if (data.empty()) co_return boost::system::error_code{};
  set_timeout(client, idle);
  if (chunked) {
    auto [ec, n] = co_await asio::async_write(
        client, http::make_chunk(asio::const_buffer(data.data(), data.size())), use_tuple);
    co_return ec;
  }
  auto [ec, n] = co_await asio::async_write(client, asio::buffer(data), use_tuple);
  co_return ec;
}

}  // namespace

asio::awaitable<bool> forward_h1_over_h2(session_context& s, tls_client& client, h2_upstream& up,
                                         filters::exchange& ex, filters::chain& chain,
                                         h1::request_parser& req_p, const forward_params& fp,
                                         h2_reconnect reconnect) {
  auto& rec = ex.record;
  const auto& limits = ex.snapshot->limits();
  auto& req = req_p.get();
  const bool has_body = fp.body ? !fp.body->empty() : !req_p.is_done();
  rec.upstream = up.text();
  auto call = co_await up.open(h2_request_fields(req), has_body, limits.connect_timeout,
                               std::move(reconnect));
  if (!call) {
    rec.failed_upstream(errc::upstream_error);
    rec.refuse(errc::upstream_error, core::str_cat("HTTP/2 origin takes no more streams",
                                                   up.error().empty() ? "" : ": ", up.error()));
    co_return co_await send_answer(client, rec, fp.version, false);
  }
  if (fp.expect_continue && fp.version >= 11 && co_await send_continue(client, limits.idle_timeout))
    co_return false;
  if (has_body && !co_await send_body(s, client, *call, ex, chain, req_p, fp))
    co_return co_await send_answer(client, rec, fp.version, false);
  if (!co_await await_h2_head(*call, rec, limits))
    co_return co_await send_answer(client, rec, fp.version, false);

  auto& st = *call->stream;
  http::response<http::buffer_body> res;
  h2_fill_response(st.headers, res);
  const unsigned status = res.result_int();
  rec.status = status;
  ex.response = &res;
  ex.response_has_body = !(fp.head || status == 204 || status == 304);
  strip_hop_by_hop(res);
  bool keep_alive = fp.client_keep_alive && !s.w.shared().draining.load();
  if (!chain.response_head().passes())
    co_return co_await send_answer(client, rec, fp.version, false);
  const bool body = ex.response_has_body;
  const bool filtered = body && chain.response_body_use() != filters::body_use::none;
  const bool sized = body && !ex.response_reframed && res.has_content_length();
  const bool chunked = body && !sized && fp.version >= 11;
  if (body && !sized && !chunked) keep_alive = false;  // HTTP/1.0: the close ends the body
  if (chunked) res.chunked(true);
  res.version(fp.version >= 11 ? 11 : 10);
  res.keep_alive(keep_alive);
  if (!body) chain.answered();
  {
    http::response_serializer<http::buffer_body> sr{res};
    set_timeout(client, limits.idle_timeout);
    auto [ec, n] = co_await http::async_write_header(client, sr, use_tuple);
    if (ec) co_return false;
  }
  if (!body) co_return keep_alive;

  const byte_throttle download{ex.download};
  std::uint64_t total = 0;
  std::string piece, out;
  for (bool last = false; !last;) {
    const auto got = co_await next_h2_piece(*call, piece, rec, limits, total);
    // Cut off: the client sees an incomplete response, never a truncated one that looks whole
    // (the connection ends abortively, session_context::response_cut).
    if (got == h2_piece::failed) {
      s.response_cut = true;
      co_return false;
    }
    last = got == h2_piece::last;
    co_await download.pace(piece.size());
    std::string_view data = piece;
    if (filtered) {
      out.clear();
      bool enough = false;
      if (!chain.response_body(piece, last, out, enough).passes()) {
        s.response_cut = true;
        co_return false;
      }
      if (enough) last = true;
      data = out;
    }
    if (last) chain.answered();
    if (co_await write_piece(client, data, chunked, limits.idle_timeout)) co_return false;
    rec.bytes_out += data.size();
    call->consume(piece.size());
  }
  if (chunked) {
    // The origin's trailers (gRPC's grpc-status), where HTTP/1.1 can carry them.
    http::fields trailer;
    for (const auto& [name, value] : h2_trailers_to_forward(st.trailers))
      trailer.insert(name, value);
    if (trailer.begin() != trailer.end() && !chain.trailers(trailer, true).passes()) {
      s.response_cut = true;
      co_return false;
    }
    set_timeout(client, limits.idle_timeout);
    auto [ec, n] = co_await asio::async_write(client, http::make_chunk_last(trailer), use_tuple);
    if (ec) co_return false;
  }
  co_return keep_alive;
}

}  // namespace airlock::proxy
