#include "proxy/tunnel.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <memory>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
using clock = std::chrono::steady_clock;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t buffer_size = 64 * 1024;

asio::awaitable<void> pump(tcp::socket& from, tcp::socket& to, std::uint64_t& total,
                           clock::time_point& last_activity) {
  auto buffer = std::make_unique<char[]>(buffer_size);
  for (;;) {
    auto [rec, n] = co_await from.async_read_some(asio::buffer(buffer.get(), buffer_size),
                                                  use_tuple);
    if (n > 0) {
      last_activity = clock::now();
      auto [wec, w] = co_await asio::async_write(to, asio::buffer(buffer.get(), n), use_tuple);
      total += w;
      if (wec) break;
      last_activity = clock::now();
    }
    if (rec) {
      // EOF (or error) from one side: pass the half-close on so the other side can finish.
      boost::system::error_code ignored;
      if (rec == asio::error::eof) {
        to.shutdown(tcp::socket::shutdown_send, ignored);
        co_return;
      }
      break;
    }
  }
  // A hard error in one direction ends the tunnel in both.
  boost::system::error_code ignored;
  from.close(ignored);
  to.close(ignored);
}

asio::awaitable<void> watchdog(clock::time_point& last_activity,
                               std::chrono::milliseconds idle_timeout) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    timer.expires_at(last_activity + idle_timeout);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec) co_return;  // cancelled: the tunnel ended first
    if (clock::now() - last_activity >= idle_timeout) co_return;
  }
}

}  // namespace

asio::awaitable<tunnel_totals> splice(tcp::socket& client, tcp::socket& upstream,
                                      std::chrono::milliseconds idle_timeout) {
  tunnel_totals totals;
  clock::time_point last_activity = clock::now();
  co_await ((pump(client, upstream, totals.client_to_upstream, last_activity) &&
             pump(upstream, client, totals.upstream_to_client, last_activity)) ||
            watchdog(last_activity, idle_timeout));
  boost::system::error_code ignored;
  client.close(ignored);
  upstream.close(ignored);
  co_return totals;
}

}  // namespace airlock::proxy
