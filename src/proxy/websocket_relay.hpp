#pragma once
// The sockets of a WebSocket connection after its 101 (forward.hpp dispatches here when the
// upgrade is "websocket"): one read loop per direction, each handing what it reads to the
// websocket_conversation and writing what it answers. Both loops may write to the same socket
// (a close after a refusal goes back to the sender), so each socket has a write gate that keeps
// one write in flight at a time (Asio allows no more).
//
// The relay ends when both directions have ended (an EOF passed on as a half-close, as in
// tunnel.hpp), when nothing moved for idle_timeout, or, once the conversation has ended, when
// both sides have closed or the linger time has passed: the sockets are half-closed and read
// (what comes is discarded) until the peers close, so that the close frame is read before the
// connection goes (closing with unread data would reset it). After a closing handshake of the
// peers' own (both Closes passed), only the agent's socket is half-closed at once: the proxy is
// its server, and the server closes the TCP connection first (RFC 6455 section 7.1.1); towards
// the origin the proxy is the client, which waits for the server to close, up to the linger.
// After the proxy closed the conversation (a refusal), both are.

#include "core/saturating_steady.hpp"
#include "proxy/byte_throttle.hpp"
#include "proxy/tunnel.hpp"
#include "proxy/websocket_conversation.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace airlock::proxy {

namespace websocket_detail {

using clock = std::chrono::steady_clock;
inline constexpr std::chrono::seconds linger{5};

// One write in flight per socket.
struct write_gate {
  bool busy = false;
  std::optional<boost::asio::steady_timer> wake;
};

template <class Stream>
boost::asio::awaitable<boost::system::error_code> gated_write(Stream& s, write_gate& gate,
                                                              std::string_view bytes) {
  namespace asio = boost::asio;
  constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
  if (!gate.wake) gate.wake.emplace(co_await asio::this_coro::executor);
  while (gate.busy) {
    gate.wake->expires_at(asio::steady_timer::time_point::max());
    auto [ec] = co_await gate.wake->async_wait(use_tuple);
    if (ec && ec != asio::error::operation_aborted) co_return ec;
    if (ec) {
      const auto state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none) co_return ec;
    }
  }
  gate.busy = true;
  auto [ec, n] = co_await asio::async_write(s, asio::buffer(bytes.data(), bytes.size()), use_tuple);
  gate.busy = false;
  gate.wake->cancel();  // wake a writer that waits
  co_return ec;
}

// Stops sending on a socket (a FIN; under TLS, without close_notify) but keeps reading.
template <class Stream>
void shutdown_send(Stream& s) {
  boost::system::error_code ignored;
  auto& lowest = boost::beast::get_lowest_layer(s);
  if constexpr (requires { lowest.socket(); })
    lowest.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  else if constexpr (requires { lowest.shutdown(boost::asio::socket_base::shutdown_send); })
    lowest.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);  // a bare socket
}

struct relay_state {
  explicit relay_state(websocket_conversation& c) : conv(c) {}
  websocket_conversation& conv;
  clock::time_point last_activity = clock::now();
  std::optional<clock::time_point> ended_at;
  write_gate client_gate;
  write_gate upstream_gate;
};

template <class From, class To>
boost::asio::awaitable<void> pump(From& from, To& to, write_gate& from_gate, write_gate& to_gate,
                                  filters::message_from side, boost::beast::flat_buffer& leftover,
                                  relay_state& st, std::uint64_t& total,
                                  const byte_throttle& throttle) {
  namespace asio = boost::asio;
  constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
  constexpr std::size_t buffer_size = 64 * 1024;
  auto buffer = std::make_unique<char[]>(buffer_size);
  // Writes one round of what the conversation answered; false when a write failed.
  const auto write_round = [&](const websocket_conversation::output& out) -> asio::awaitable<bool> {
    // (No co_await inside a condition with && or ?:: GCC 12 mishandles such temporaries.)
    if (!out.to_other.empty()) {
      if (throttle) co_await throttle.pace(out.to_other.size());
      const auto ec = co_await gated_write(to, to_gate, out.to_other);
      if (ec) co_return false;
      total += out.to_other.size();
    }
    if (!out.to_sender.empty()) {
      const auto ec = co_await gated_write(from, from_gate, out.to_sender);
      if (ec) co_return false;
    }
    co_return true;
  };
  const auto handle = [&](std::string_view bytes) -> asio::awaitable<bool> {
    if (st.conv.ended()) co_return true;  // draining: what comes now is discarded
    // A round at a time (websocket_conversation::output_bound): one read of compressed frames
    // can inflate to dozens of max-size messages, so each round is written before the next is
    // made, from frames already read. While the receiver does not read, the write waits with
    // one round held and nothing more is read from this side.
    for (bool more = true; more;) {
      websocket_conversation::output out;
      more = st.conv.on_bytes(side, bytes, out);
      bytes = {};
      const bool written = co_await write_round(out);
      if (!written) co_return false;
      st.last_activity = clock::now();
    }
    if (st.conv.ended() && !st.ended_at) {
      st.ended_at = clock::now();
      const bool from_agent = side == filters::message_from::client;
      const bool shut_origin = !st.conv.closing_handshake_done();
      if (from_agent || shut_origin) shutdown_send(from);
      if (!from_agent || shut_origin) shutdown_send(to);
    }
    co_return true;
  };
  if (leftover.size() > 0) {
    const auto data = leftover.data();
    const std::string bytes(static_cast<const char*>(data.data()), data.size());
    leftover.consume(leftover.size());
    const bool go_on = co_await handle(bytes);
    if (!go_on) co_return;
  }
  for (;;) {
    auto [rec, n] =
        co_await from.async_read_some(asio::buffer(buffer.get(), buffer_size), use_tuple);
    if (n > 0) {
      st.last_activity = clock::now();
      const bool go_on = co_await handle(std::string_view(buffer.get(), n));
      if (!go_on) break;
      st.last_activity = clock::now();
    }
    if (rec) {
      if (st.conv.ended()) co_return;  // drained: the peer closed after our close
      if (rec == asio::error::eof && tunnel_detail::half_close(to)) co_return;
      break;
    }
  }
  tunnel_detail::close_stream(from);
  tunnel_detail::close_stream(to);
}

inline boost::asio::awaitable<void> watchdog(relay_state& st,
                                             std::chrono::milliseconds idle_timeout) {
  namespace asio = boost::asio;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    // After the proxy closed the conversation, the peers get `linger` to close in turn.
    const auto deadline = st.ended_at ? *st.ended_at + linger
                                      : st.last_activity + core::saturating_steady(idle_timeout);
    timer.expires_at(std::min(deadline, clock::now() + std::chrono::seconds(1)));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    const auto now = clock::now();
    if (st.ended_at ? now >= *st.ended_at + linger : now - st.last_activity >= idle_timeout)
      co_return;
  }
}

}  // namespace websocket_detail

// Relays a WebSocket connection through `conv` until it ends; the bytes forwarded each way are
// added to `totals`. Bytes already buffered past the heads are the first frames.
template <class Client, class Upstream>
boost::asio::awaitable<void> relay_websocket(
    Client& client, boost::beast::flat_buffer& client_buffer, Upstream& upstream,
    boost::beast::flat_buffer& up_buffer, websocket_conversation& conv,
    std::chrono::milliseconds idle_timeout, byte_throttle upload, byte_throttle download,
    tunnel_totals& totals) {
  using namespace boost::asio::experimental::awaitable_operators;
  using namespace websocket_detail;
  relay_state st(conv);
  co_await ((pump(client, upstream, st.client_gate, st.upstream_gate, filters::message_from::client,
                  client_buffer, st, totals.client_to_upstream, upload) &&
             pump(upstream, client, st.upstream_gate, st.client_gate, filters::message_from::origin,
                  up_buffer, st, totals.upstream_to_client, download)) ||
            watchdog(st, idle_timeout));
  tunnel_detail::close_stream(client);
  tunnel_detail::close_stream(upstream);
}

}  // namespace airlock::proxy
