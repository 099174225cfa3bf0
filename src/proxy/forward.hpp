#pragma once
// Forwarding one exchange over an upstream connection: the (already rewritten) request head and
// body up, the response head and body back, each through the filter chain. Any answer of the
// proxy's own is sent here; the exchange's record is filled in.

#include "core/str_cat.hpp"
#include "filters/chain.hpp"
#include "policy/model.hpp"
#include "policy/snapshot.hpp"
#include "proxy/h1_body.hpp"
#include "proxy/h1_request.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/response_head.hpp"
#include "proxy/switch_protocols.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>

#include <optional>
#include <string>

namespace airlock::proxy {

struct forward_params {
  unsigned version = 11;  // the client's HTTP version
  bool client_keep_alive = true;
  bool expect_continue = false;  // answer 100 Continue before reading the body
  bool head = false;             // a HEAD request: the response has no body
  std::string upgrade;           // the upgrade the rule allows (empty: none)
  bool retry_if_stale = false;   // a pooled connection carrying a bodiless request
  // The request body, already read whole (a filter checked it); null = stream it from the
  // client. The head's Content-Length already says its size.
  const std::string* body = nullptr;
};

struct forward_result {
  bool client_continues = false;   // the client connection may carry another request
  bool upstream_reusable = false;  // the upstream connection may carry another request
  // A reused pooled connection turned out closed before any response byte: nothing was
  // answered, and a bodiless request may be sent again on a fresh connection.
  bool stale_connection = false;
  // The response's head went out but its body was cut short (the origin's stream failed, or a
  // filter stopped it): the client's connection must end abortively, never with a clean close
  // (a TCP FIN, a TLS close_notify) that would make a close-delimited body look whole.
  bool cut = false;
};

namespace forward_detail {

// The client's connection failed while the response was written: the record keeps its decision
// and the origin's status (the head may have gone out), and says the client did not get it all.
inline void note_undelivered(filters::exchange_record& rec, std::uint64_t body_bytes_sent,
                             const boost::system::error_code& ec) {
  std::string what = core::str_cat("response not delivered: the client's connection failed after ",
                                   body_bytes_sent, " body bytes (", ec.message(), ")");
  rec.detail = rec.detail.empty() ? std::move(what) : core::str_cat(rec.detail, "; ", what);
}

// The refusal or failure the chain (or the caller) recorded, answered; the connection ends.
template <class Client>
boost::asio::awaitable<forward_result> answer(Client& client, filters::exchange_record& rec,
                                              unsigned version) {
  co_await send_answer(client, rec, version, false);
  co_return forward_result{};
}

// Sends the request body (held whole, or streamed from the client through the chain's body
// filters). False when the exchange ended here (answered).
template <class Client, class Upstream>
boost::asio::awaitable<bool> send_request_body(
    worker& w, Client& client, boost::beast::flat_buffer& client_buffer, Upstream& upstream,
    h1::request_parser& req_p, http::request_serializer<http::buffer_body>& req_sr,
    filters::chain& chain, const policy::model::limits& limits, const forward_params& fp) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const byte_throttle upload{ex.upload};
  if (fp.body) {
    auto& b = req_p.get().body();
    b.data = fp.body->empty() ? nullptr : const_cast<char*>(fp.body->data());
    b.size = fp.body->size();
    b.more = false;
    co_await upload.pace(fp.body->size());
    set_timeout(upstream, limits.idle_timeout);
    auto [ec, n] = co_await h1::async_write(upstream, req_sr);
    if (ec == http::error::need_buffer) ec = {};
    rec.bytes_in = fp.body->size();
    if (!ec) co_return true;
    rec.failed_upstream(core::errc::upstream_error);
    rec.refuse(core::errc::upstream_error, core::str_cat("sending request: ", ec.message()));
    co_await send_answer(client, rec, fp.version, false);
    co_return false;
  }
  filters::chain* observer = chain.request_body_use() == filters::body_use::none ? nullptr : &chain;
  auto body = co_await h1::relay_body(w, client, client_buffer, req_p, upstream, req_sr,
                                      limits.idle_timeout, upload, observer);
  rec.bytes_in = body.bytes;
  // The origin holds a partial request in each of these cases: the connection is dropped,
  // never completed.
  if (body.stopped) {
    co_await send_answer(client, rec, fp.version, false);
    co_return false;
  }
  if (body.read_ec) {
    if (body.read_ec == http::error::body_limit)
      rec.refuse(core::errc::body_too_large, h1::body_limit_detail(ex));
    else
      rec.refuse(core::errc::bad_request,
                 core::str_cat("reading request body: ", body.read_ec.message()));
    co_await send_answer(client, rec, fp.version, false);
    co_return false;
  }
  if (body.write_ec) {
    rec.failed_upstream(core::errc::upstream_error);
    rec.refuse(core::errc::upstream_error,
               core::str_cat("sending request body: ", body.write_ec.message()));
    co_await send_answer(client, rec, fp.version, false);
    co_return false;
  }
  co_return true;
}

// A fresh parser for the next response head (an interim one is dropped, see forward()).
inline void prepare_response_parser(std::optional<http::response_parser<http::buffer_body>>& res_p,
                                    const policy::model::limits& limits, bool head_request) {
  res_p.emplace();
  res_p->header_limit(h1::header_limit(limits));
  res_p->body_limit(limits.response_bytes);
  if (head_request) res_p->skip(true);
}

// Interim 1xx answers other than 101 are dropped: the proxy removed Expect and answers
// 100-continue itself (RFC 9110 section 15.2).
inline bool interim_response(unsigned status) {
  return status >= 100 && status < 200 && status != 101;
}

// Reads the origin's final response head into a fresh `res_p`, dropping interim ones, all within
// one limits.response_timeout: the deadline is set once, not again for each interim head, so
// an origin that sends "102 Processing" every second cannot hold the exchange past it.
template <class Upstream>
boost::asio::awaitable<boost::system::error_code> read_final_response_head(
    Upstream& upstream, boost::beast::flat_buffer& up_buffer,
    std::optional<http::response_parser<http::buffer_body>>& res_p,
    const policy::model::limits& limits, bool head_request) {
  set_timeout(upstream, limits.response_timeout);
  for (;;) {
    prepare_response_parser(res_p, limits, head_request);
    auto [ec, n] = co_await http::async_read_header(upstream, up_buffer, *res_p, use_tuple);
    if (ec || !interim_response(res_p->get().result_int())) co_return ec;
  }
}

// A reused pooled connection the origin closed as we sent on it (a race no check can close):
// nothing was answered, and a bodiless request may be sent again on a fresh connection.
// Over TLS, an origin that closed without a close_notify alert reads as stream_truncated.
inline bool closed_by_peer(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == boost::asio::error::connection_reset ||
         ec == boost::asio::error::eof || ec == boost::asio::error::broken_pipe ||
         ec == boost::asio::ssl::error::stream_truncated;
}
inline bool stale_connection(const boost::system::error_code& ec, const forward_params& fp,
                             const boost::beast::flat_buffer& up_buffer) {
  return ec && fp.retry_if_stale && up_buffer.size() == 0 && closed_by_peer(ec);
}

// The response head through the chain (redaction may edit it), re-framed where its body changes
// or has no framing, then the body through the chain's response filters, or as it is.
template <class Client, class Upstream>
boost::asio::awaitable<forward_result> relay_response(
    worker& w, Client& client, Upstream& upstream, boost::beast::flat_buffer& up_buffer,
    http::response_parser<http::buffer_body>& parser, filters::chain& chain,
    const policy::model::limits& limits, const forward_params& fp) {
  forward_result out;
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& res = parser.get();
  const unsigned version = fp.version;
  const bool no_body = !ex.response_has_body;
  auto* res_p = &parser;
  const bool upstream_keep_alive = res_p->keep_alive();
  strip_hop_by_hop(res);
  bool keep_alive = fp.client_keep_alive && !w.shared().draining.load();
  // The response filters (redaction) edit the head, and say whether they need the body.
  if (!chain.response_head().passes()) co_return co_await answer(client, rec, version);
  const bool filtered = !no_body && chain.response_body_use() != filters::body_use::none;
  if (!no_body && (ex.response_reframed || !res_p->content_length())) {
    // A chunked, close-delimited (or re-written) response: chunked for HTTP/1.1 clients, else
    // close-delimited, the connection closed after it. An HTTP/1.0 client cannot read chunked
    // framing, and must not be sent Transfer-Encoding at all (RFC 9112 section 6.1).
    if (version >= 11) {
      res.chunked(true);
    } else {
      res.chunked(false);
      keep_alive = false;
    }
  }
  res.version(version >= 11 ? 11 : 10);
  res.keep_alive(keep_alive);

  http::response_serializer<http::buffer_body> res_sr{res};
  // A filtered body may be held back a while (a redaction overlap): its head goes first unless
  // the whole body is already here.
  const bool whole_body_here =
      res_p->content_length() && up_buffer.size() >= *res_p->content_length();
  // (The answer is whole once its head is: what the exchange held for the origin goes back
  // before the client can have it, chain::answered.)
  if (no_body) chain.answered();
  if (no_body || (!res_p->is_done() && (filtered ? !whole_body_here : up_buffer.size() == 0))) {
    // Nothing of the body is here yet (or there is none): send the head now, so a client of a
    // slow stream sees it at once.
    set_timeout(client, limits.idle_timeout);
    auto [wh_ec, wh_n] = co_await http::async_write_header(client, res_sr, use_tuple);
    if (wh_ec) {
      note_undelivered(rec, 0, wh_ec);
      co_return out;
    }
  }
  if (!no_body) {
    const byte_throttle download{ex.download};
    // (No co_await inside a conditional expression: GCC 12 destroys such temporaries twice.)
    h1::relay_result body;
    if (filtered)
      body = co_await h1::relay_filtered(w, upstream, up_buffer, *res_p, client, res_sr,
                                         limits.idle_timeout, download, chain);
    else
      body = co_await h1::relay_body(w, upstream, up_buffer, *res_p, client, res_sr,
                                     limits.idle_timeout, download, nullptr, &chain);
    rec.bytes_out = body.bytes_written;
    if (body.read_ec) {
      // Cut off: the client sees an incomplete response (the connection ends abortively, before
      // the declared length or the final chunk), never a truncated one that looks whole.
      rec.failed_upstream(body.read_ec == http::error::body_limit ? core::errc::response_too_large
                                                                  : core::errc::upstream_error);
      rec.detail = core::str_cat("response body: ", body.read_ec.message());
      out.cut = true;
      co_return out;
    }
    if (body.stopped) {
      // A filter failed the body (the chain recorded why). Nothing sent yet (the whole body was
      // here with its head): the agent gets an answer that says why instead of a closed
      // connection; else the connection is cut.
      if (!res_sr.is_header_done()) {
        co_await send_answer(client, rec, version, false);
      } else {
        out.cut = true;
      }
      co_return out;
    }
    if (body.write_ec) {
      note_undelivered(rec, body.bytes_written, body.write_ec);
      co_return out;
    }
  }
  out.client_continues = keep_alive;
  out.upstream_reusable = upstream_keep_alive && res_p->is_done() && up_buffer.size() == 0;
  co_return out;
}

}  // namespace forward_detail

// Sends the request (head rewritten, body as the chain allows) and relays the response back
// through the chain's response filters.
template <class Client, class Upstream>
boost::asio::awaitable<forward_result> forward(
    worker& w, Client& client, boost::beast::flat_buffer& client_buffer, Upstream& upstream,
    boost::beast::flat_buffer& up_buffer, h1::request_parser& req_p, filters::chain& chain,
    const policy::model::limits& limits, const forward_params& fp) {
  using namespace forward_detail;
  forward_result out;
  auto& ex = chain.ex();
  auto& rec = ex.record;
  const unsigned version = fp.version;

  http::request_serializer<http::buffer_body> req_sr{req_p.get()};
  // The client waits for this before it sends the body.
  if (fp.expect_continue && version >= 11 && co_await send_continue(client, limits.idle_timeout))
    co_return out;
  if (fp.body || !req_p.is_done()) {
    if (!co_await send_request_body(w, client, client_buffer, upstream, req_p, req_sr, chain,
                                    limits, fp))
      co_return out;
  } else {
    // No body: the head alone (inline, the common case, without a coroutine frame of its own),
    // written as it is (h1_write.hpp), or by the serializer for a chunked one (its last chunk).
    auto& b = req_p.get().body();
    b.data = nullptr;
    b.size = 0;
    b.more = false;
    set_timeout(upstream, limits.idle_timeout);
    boost::system::error_code wec;
    if (!req_p.get().chunked()) {
      std::string head;
      h1::append_head(head, req_p.get().base());
      std::tie(wec, std::ignore) =
          co_await h1::write_buffers(upstream, std::array{boost::asio::buffer(head)});
    } else {
      std::tie(wec, std::ignore) = co_await h1::async_write(upstream, req_sr);
    }
    if (stale_connection(wec, fp, up_buffer)) {
      out.stale_connection = true;
      co_return out;
    }
    if (wec) {
      rec.failed_upstream(core::errc::upstream_error);
      rec.refuse(core::errc::upstream_error, core::str_cat("sending request: ", wec.message()));
      co_return co_await answer(client, rec, version);
    }
  }

  std::optional<http::response_parser<http::buffer_body>> res_p;
  const auto ec = co_await read_final_response_head(upstream, up_buffer, res_p, limits, fp.head);
  if (stale_connection(ec, fp, up_buffer)) {
    out.stale_connection = true;
    co_return out;
  }
  if (ec) {
    if (!record_response_failure(rec, ec, w.shared().draining.load())) co_return out;
    co_return co_await answer(client, rec, version);
  }
  if (refused_response_framing(rec, res_p->get())) co_return co_await answer(client, rec, version);
  auto& res = res_p->get();
  const unsigned status = res.result_int();
  rec.status = status;
  ex.response = &res;
  const bool no_body = fp.head || status == 204 || status == 304 || status == 101;
  ex.response_has_body = !no_body;

  if (status == 101) {
    if (fp.upgrade.empty()) {
      rec.failed_upstream(core::errc::upstream_error);
      rec.refuse(core::errc::upstream_error,
                 "origin switched protocols without an allowed upgrade");
      co_return co_await answer(client, rec, version);
    }
    if (!chain.response_head().passes()) co_return co_await answer(client, rec, version);
    co_await switch_protocols(client, client_buffer, upstream, up_buffer, res, chain, fp.upgrade,
                              limits, version);
    co_return out;
  }

  co_return co_await relay_response(w, client, upstream, up_buffer, *res_p, chain, limits, fp);
}

}  // namespace airlock::proxy
