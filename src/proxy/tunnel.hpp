#pragma once
// Relays bytes both ways between two connected streams until both directions have ended or
// nothing moved either way for idle_timeout. Back pressure: a direction does not read again
// until its previous write completed. Works for plain sockets (an EOF is passed on as a
// half-close) and for TLS streams (an EOF ends the tunnel: TLS has no half-close).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include "core/saturating_steady.hpp"
#include "proxy/byte_throttle.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

namespace airlock::proxy {

struct tunnel_totals {
  std::uint64_t client_to_upstream = 0;
  std::uint64_t upstream_to_client = 0;
};

namespace tunnel_detail {

using clock = std::chrono::steady_clock;
inline constexpr std::size_t buffer_size = 64 * 1024;

// Passes an EOF on. Returns false when the stream cannot half-close (TLS).
inline bool half_close(boost::asio::ip::tcp::socket& s) {
  boost::system::error_code ignored;
  s.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  return true;
}
template <class Stream>
bool half_close(Stream&) {
  return false;
}

template <class Stream>
void close_stream(Stream& s) {
  boost::system::error_code ignored;
  auto& lowest = boost::beast::get_lowest_layer(s);
  if constexpr (requires { lowest.socket(); })
    lowest.socket().close(ignored);
  else
    lowest.close();  // an in-memory test stream
}
inline void close_stream(boost::asio::ip::tcp::socket& s) {
  boost::system::error_code ignored;
  s.close(ignored);
}

template <class From, class To>
boost::asio::awaitable<void> pump(From& from, To& to, std::uint64_t& total,
                                  clock::time_point& last_activity, const byte_throttle& throttle) {
  namespace asio = boost::asio;
  constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
  auto buffer = std::make_unique<char[]>(buffer_size);
  const std::size_t read_size = throttle.piece(buffer_size);
  for (;;) {
    auto [rec, n] = co_await from.async_read_some(asio::buffer(buffer.get(), read_size), use_tuple);
    if (n > 0) {
      last_activity = clock::now();
      if (throttle) {
        co_await throttle.pace(n);
        last_activity = clock::now();
      }
      auto [wec, w] = co_await asio::async_write(to, asio::buffer(buffer.get(), n), use_tuple);
      total += w;
      if (wec) break;
      last_activity = clock::now();
    }
    if (rec) {
      if (rec == asio::error::eof && half_close(to)) co_return;
      break;
    }
  }
  // An error, or an EOF that cannot be passed on, ends the tunnel in both directions.
  close_stream(from);
  close_stream(to);
}

inline boost::asio::awaitable<void> watchdog(clock::time_point& last_activity,
                                             std::chrono::milliseconds idle_timeout) {
  namespace asio = boost::asio;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    timer.expires_at(last_activity + core::saturating_steady(idle_timeout));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;  // cancelled: the tunnel ended first
    if (clock::now() - last_activity >= idle_timeout) co_return;
  }
}

}  // namespace tunnel_detail

// `upload` paces client-to-upstream bytes, `download` the other way (both off by default).
template <class Client, class Upstream>
boost::asio::awaitable<tunnel_totals> splice(Client& client, Upstream& upstream,
                                             std::chrono::milliseconds idle_timeout,
                                             byte_throttle upload = {},
                                             byte_throttle download = {}) {
  using namespace boost::asio::experimental::awaitable_operators;
  using namespace tunnel_detail;
  tunnel_totals totals;
  clock::time_point last_activity = clock::now();
  co_await ((pump(client, upstream, totals.client_to_upstream, last_activity, upload) &&
             pump(upstream, client, totals.upstream_to_client, last_activity, download)) ||
            watchdog(last_activity, idle_timeout));
  close_stream(client);
  close_stream(upstream);
  co_return totals;
}

}  // namespace airlock::proxy
