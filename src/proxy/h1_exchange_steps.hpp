#pragma once
// The steps of an exchange where the HTTP/1.1 codec answers for itself: reading the request head
// (a malformed, oversized or late one is refused and recorded here) and holding a request body
// whole for a filter that must see all of it before any byte is forwarded.

#include "filters/chain.hpp"
#include "proxy/h1_body.hpp"
#include "proxy/h1_request.hpp"
#include "proxy/session_context.hpp"

#include <optional>
#include <string>

namespace airlock::proxy::h1 {

// Reads the request head; nullopt when it is complete, else whether the connection goes on (a
// refusal of a malformed or oversized head is answered and recorded here).
template <class Client>
boost::asio::awaitable<std::optional<bool>> read_request_head(Client& client,
                                                              boost::beast::flat_buffer& buffer,
                                                              request_parser& req_p,
                                                              const policy::model::limits& limits,
                                                              filters::exchange_record& rec) {
  // (read_head's steps, without a coroutine frame of their own.)
  prepare_head(req_p, limits);
  set_timeout(client, limits.head_timeout);
  auto [ec, n] = co_await http::async_read_header(client, buffer, req_p, use_tuple);
  const auto head = head_read(ec, n, buffer, limits);
  switch (head.what) {
    case head_outcome::kind::complete:
      co_return std::nullopt;
    case head_outcome::kind::closed:
      rec.skipped = true;  // nothing began: nothing to record
      co_return false;
    case head_outcome::kind::timed_out:
      rec.refuse(head.reason, head.detail);
      rec.status = 408;  // the timeout closed the socket: recorded, nothing can be sent
      co_return false;
    case head_outcome::kind::refused:
      break;
  }
  rec.refuse(head.reason, head.detail);
  co_return co_await send_answer(client, rec, 11, false);
}

// Reads a request body whole (a filter must see all of it before any byte is forwarded) and
// shows it to the chain; nullopt when it passed, else whether the connection goes on.
template <class Client>
boost::asio::awaitable<std::optional<bool>> hold_whole_body(session_context& s, Client& client,
                                                            request_parser& req_p,
                                                            filters::chain& chain,
                                                            std::string& body) {
  auto& ex = chain.ex();
  auto& rec = ex.record;
  auto& req = req_p.get();
  const auto& limits = ex.snapshot->limits();
  if (expects_continue(req) && req.version() >= 11 && ex.has_body &&
      co_await send_continue(client, limits.idle_timeout))
    co_return false;
  auto read_ec = co_await read_whole_body(client, s.buffer, req_p, body, limits.idle_timeout);
  rec.bytes_in = body.size();
  if (read_ec) {
    if (read_ec == http::error::body_limit)
      rec.refuse(core::errc::body_too_large, body_limit_detail(ex));
    else
      rec.refuse(core::errc::bad_request,
                 core::str_cat("reading request body: ", read_ec.message()));
    co_return co_await send_answer(client, rec, req.version(), false);
  }
  // The whole body was read: the connection may go on after a refusal.
  if (!chain.request_body(body, true).passes())
    co_return co_await send_answer(client, rec, req.version(),
                                   req.keep_alive() && !s.w.shared().draining.load());
  if (ex.rewritten_body) body = std::move(*ex.rewritten_body);  // DLP's redact
  req.content_length(body.size());
  co_return std::nullopt;
}

}  // namespace airlock::proxy::h1
