#include "telemetry/admin_events.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <string>
#include <vector>

namespace airlock::telemetry {

namespace net = boost::asio;

net::awaitable<void> serve_events(boost::beast::tcp_stream& stream,
                                  std::shared_ptr<event_hub::subscription> sub,
                                  std::function<bool()> stopping, event_stream_timing timing) {
  constexpr auto use_tuple = net::as_tuple(net::use_awaitable);
  // No Content-Length and no chunking: the stream ends when the connection closes
  // (RFC 9112 section 6.3, item 8). `retry` tells EventSource to reconnect after 2 s.
  std::string out =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
      "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"
      "retry: 2000\n: airlock live events\n\n";
  net::steady_timer timer(co_await net::this_coro::executor);
  auto last_write = std::chrono::steady_clock::now();
  std::vector<std::string> events;
  for (;;) {
    if (!out.empty()) {
      stream.expires_after(timing.write_timeout);
      auto [ec, n] = co_await net::async_write(stream, net::buffer(out), use_tuple);
      if (ec) co_return;
      out.clear();
      last_write = std::chrono::steady_clock::now();
    }
    timer.expires_after(timing.poll);
    co_await timer.async_wait(use_tuple);
    if (stopping()) co_return;
    events.clear();
    if (const auto lost = sub->take(events); lost > 0) {
      out += "event: lost\ndata: {\"lost\":";
      out += std::to_string(lost);
      out += "}\n\n";
    }
    // Each event is one JSON line: JSON strings escape CR and LF, so it is one data field.
    for (const auto& e : events) {
      out += "data: ";
      out += e;
      out += "\n\n";
    }
    if (out.empty() && std::chrono::steady_clock::now() - last_write >= timing.heartbeat)
      out = ": heartbeat\n\n";
  }
}

}  // namespace airlock::telemetry
