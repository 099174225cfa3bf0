#pragma once
// What every part of a session uses to talk to its client: timeouts, the proxy's own answers
// (a refusal is one line: record it, then `co_return co_await send_answer(...)`) and
// 100-continue. Templates over the client stream, so the same code serves a plain connection,
// an intercepted tunnel and Beast's in-memory test::stream.

#include "core/saturating_steady.hpp"
#include "core/str_cat.hpp"
#include "filters/chain.hpp"
#include "filters/exchange.hpp"
#include "proxy/answer.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <string>

namespace airlock::proxy {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// Sets the deadline of a stream's next operations (Beast's tcp_stream); a stream without
// timeouts (test::stream) is left as it is. The duration is converted saturating (a policy
// limit in milliseconds may not fit steady_clock nanoseconds: core::saturating_steady).
template <class Stream, class Rep, class Period>
void set_timeout(Stream& s, std::chrono::duration<Rep, Period> limit) {
  const auto d = core::saturating_steady(limit);
  auto& lowest = boost::beast::get_lowest_layer(s);
  if constexpr (requires { lowest.expires_after(d); }) lowest.expires_after(d);
}
template <class Stream>
void clear_timeout(Stream& s) {
  auto& lowest = boost::beast::get_lowest_layer(s);
  if constexpr (requires { lowest.expires_never(); }) lowest.expires_never();
}

// Writes the answer for the refusal or failure already in `rec` (rec.refuse, or a filter's
// verdict applied by the chain). Returns whether the connection may carry another request.
template <class Client>
boost::asio::awaitable<bool> send_answer(Client& client, filters::exchange_record& rec,
                                         unsigned version, bool keep_alive) {
  if (rec.chain) rec.chain->answered();
  auto res = rec.answer_status != 0
                 ? make_endpoint_answer(rec.answer_status, rec.answer_body, version, keep_alive)
                 : make_answer(rec.reason, rec.detail, version, keep_alive);
  if (rec.retry_after > 0)
    res.set(boost::beast::http::field::retry_after, std::to_string(rec.retry_after));
  if (rec.answer) {  // the refusal in the client's protocol (a JSON-RPC error), same headers
    res.result(rec.answer->status);
    res.set(boost::beast::http::field::content_type, rec.answer->content_type);
    res.body() = rec.answer->body;
    res.prepare_payload();
  }
  set_timeout(client, std::chrono::seconds(10));
  auto [ec, n] = co_await boost::beast::http::async_write(client, res, use_tuple);
  // The record's status is what the client received: nothing, when the answer was not written
  // (the drain closed the connection, the client went away).
  rec.status = ec ? 0 : res.result_int();
  if (ec)
    rec.detail = core::str_cat(rec.detail, rec.detail.empty() ? "" : "; ",
                               "answer not delivered: ", ec.message());
  co_return !ec && keep_alive;
}

// Tells a client that sent "Expect: 100-continue" to go on with its body (RFC 9110 section
// 10.1.1). Returns the write's error.
template <class Client>
boost::asio::awaitable<boost::system::error_code> send_continue(Client& client,
                                                                std::chrono::milliseconds timeout) {
  static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
  set_timeout(client, timeout);
  auto [ec, n] = co_await boost::asio::async_write(client, boost::asio::buffer(cont), use_tuple);
  co_return ec;
}

}  // namespace airlock::proxy
