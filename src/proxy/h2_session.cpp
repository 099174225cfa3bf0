// The HTTP/2 side of an intercepted tunnel (h2_connection.hpp): the reader, the writer, the
// watchdog and a coroutine per stream, on the session's executor.
#include "proxy/h2_session.hpp"

#include "core/log.hpp"
#include "core/saturating_steady.hpp"
#include "core/steady_ns.hpp"
#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connect.hpp"
#include "proxy/h2_connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>

namespace airlock::proxy {
namespace asio = boost::asio;

namespace {
// Output the writer sends at once, and the most the reader lets pile up before it stops
// reading (a PING or SETTINGS flood from a client that does not read stops here).
constexpr std::size_t write_chunk = 64 * 1024;
constexpr std::size_t output_high_water = 256 * 1024;
}  // namespace

h2_connection::h2_connection(session_context& s, tls_client& client, tunnel_context& t,
                             const h2::limits& limits)
    : s_(s),
      client_(client),
      t_(t),
      limits_(limits),
      codec_(limits, *this),
      write_wanted_(s.client.get_executor()),
      output_drained_(s.client.get_executor()),
      streams_done_(s.client.get_executor()),
      tick_(s.client.get_executor()),
      upstream_slots_(std::make_shared<upstream_slots>(s.w.shared().limiter, limiter_key(s))) {}

void h2_connection::on_request(const std::shared_ptr<h2::stream>& st) {
  // Streams the client closed still finish their exchange (an upstream being connected, a
  // record to write): no more of them than the streams it may have open, or resetting streams
  // would make work without bound (CVE-2023-44487).
  if (active_ >= limits_.max_concurrent_streams || closing_) {
    codec_.reset(*st, NGHTTP2_REFUSED_STREAM);
    return;
  }
  auto ss = std::make_shared<h2_stream_state>(s_.client.get_executor());
  ss->stream = st;
  st->user = ss.get();
  streams_.erase(
      std::remove_if(streams_.begin(), streams_.end(), [](const auto& w) { return w.expired(); }),
      streams_.end());
  streams_.push_back(ss);
  ++active_;
  asio::co_spawn(s_.client.get_executor(), serve(std::move(ss)), asio::detached);
}

void h2_connection::on_activity(h2::stream& st) {
  if (!st.user) return;
  auto* ss = static_cast<h2_stream_state*>(st.user);
  ss->changed.notify();
  // A stream bridged to an HTTP/2 upstream may be waiting on the origin's side. One the client
  // reset (or whose connection ended) has nobody to answer: its origin stream is cancelled
  // now, not left in flight until the origin answers or limits.response_timeout passes (a
  // rapid-reset flood would keep the origin working for nothing, CVE-2023-44487).
  // One on an HTTP/1.1 upstream has that connection closed under its read, as the connection's
  // end does (serve): the read ends operation_aborted, not an upstream failure.
  if (st.closed && st.close_error != NGHTTP2_NO_ERROR && ss->upstream && ss->upstream->upstream) {
    boost::system::error_code ignored;
    ss->upstream->upstream->socket().close(ignored);
  }
  if (!ss->call) return;
  if (st.closed && !ss->call->stream->closed) ss->call->reset(NGHTTP2_CANCEL);
  ss->call->changed.notify();
}

std::shared_ptr<h2_upstream> h2_connection::upstream_h2() const {
  return upstream_h2_ && upstream_h2_->usable() && !closing_ ? upstream_h2_ : nullptr;
}

std::shared_ptr<h2_upstream> h2_connection::adopt_upstream_h2(std::shared_ptr<h2_upstream> up) {
  // Two streams that found none connected at once: the first one made stays (streams may be
  // waiting there for a slot), the later one, with no stream yet, is closed.
  if (auto first = upstream_h2(); first && first != up) {
    up->close();
    return first;
  }
  if (upstream_h2_ && upstream_h2_ != up) upstream_h2_->close();  // unusable: GOAWAY or cut
  upstream_h2_ = up;
  return up;
}

asio::awaitable<void> h2_connection::serve(std::shared_ptr<h2_stream_state> ss) {
  co_await serve_h2_stream(*this, *ss);
  ss->stream->user = nullptr;
  kick();
  if (--active_ == 0) streams_done_.notify();
}

std::unique_ptr<tunnel_context> h2_connection::take_upstream(const policy::model::limits& caps,
                                                             bool idle_ok) {
  if (idle_ok && !idle_upstreams_.empty()) {
    auto u = std::move(idle_upstreams_.back());
    idle_upstreams_.pop_back();
    return u;
  }
  auto slot = upstream_slots_->take(caps.max_connections, caps.max_connections_per_client);
  if (!slot) return nullptr;
  auto u = std::make_unique<tunnel_context>(
      tunnel_context{.target = t_.target, .agent = t_.agent, .tls = t_.tls});
  u->slot = std::move(slot);
  // The first upstream takes the connection the CONNECT made to check the origin.
  u->early = std::move(t_.early);
  u->early_peer = t_.early_peer;
  u->early_connect_time = t_.early_connect_time;
  t_.early.reset();
  return u;
}

void h2_connection::put_upstream(std::unique_ptr<tunnel_context> u) {
  // As many kept as the client may have streams in flight; the rest close.
  if (!closing_ && u->upstream && idle_upstreams_.size() < limits_.max_concurrent_streams)
    idle_upstreams_.push_back(std::move(u));
}

std::string upstream_slots_detail(const policy::model::limits& caps) {
  return core::str_cat(
      "each HTTP/2 stream in flight to an HTTP/1.1 origin needs an upstream connection, counted as "
      "one of the client's: limits.max_connections_per_client (",
      caps.max_connections_per_client, ") or max_connections (", caps.max_connections, ") reached");
}

asio::awaitable<void> h2_connection::read_loop() {
  std::array<char, 16 * 1024> buf;
  while (codec_.want_read() && !closing_) {
    while (output_.size() > output_high_water && !writer_done_)
      co_await output_drained_.wait(std::chrono::seconds(1));
    if (writer_done_) break;
    auto [ec, n] = co_await client_.async_read_some(asio::buffer(buf), use_tuple);
    if (ec) {
      if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated && !closing_)
        AIRLOCK_LOG(info, "h2", "HTTP/2 connection of ", s_.client_text, ": ", ec.message());
      break;
    }
    last_read_ns_ = core::steady_now_ns();
    const bool ok = codec_.recv({buf.data(), n});
    kick();
    if (!ok) {
      AIRLOCK_LOG(info, "h2", "HTTP/2 connection of ", s_.client_text, " ended: ", codec_.error());
      break;
    }
  }
}

asio::awaitable<void> h2_connection::write_loop() {
  for (;;) {
    if (!codec_.fill_output(output_, write_chunk)) output_.clear();
    if (output_.empty()) {
      output_drained_.notify();
      if (closing_ || codec_.finished()) break;
      co_await write_wanted_.wait(std::chrono::seconds(5));
      continue;
    }
    auto [ec, n] = co_await asio::async_write(client_, asio::buffer(output_), use_tuple);
    if (ec) {
      if (!closing_)
        AIRLOCK_LOG(info, "h2", "HTTP/2 connection of ", s_.client_text, ": ", ec.message());
      break;
    }
    last_write_ns_ = core::steady_now_ns();
    output_.clear();
  }
  writer_done_ = true;
  output_drained_.notify();
}

asio::awaitable<void> h2_connection::watchdog() {
  // (The policy in force when the connection started; held, as a reload may replace it.)
  const auto active = s_.w.shared().current_active();
  const auto& limits = active->snapshot().limits();
  const std::chrono::nanoseconds idle = core::saturating_steady(limits.idle_timeout);
  while (!closing_) {
    tick_.expires_after(std::min<std::chrono::nanoseconds>(idle / 4, std::chrono::seconds(1)));
    co_await tick_.async_wait(use_tuple);
    if (closing_) break;
    const auto now = core::steady_now_ns();
    // Idle: no stream and nothing read for idle_timeout. Stalled: output waiting and none of
    // it taken for idle_timeout (the client's TCP window stays shut).
    const bool idle_out = active_ == 0 && now - last_read_ns_ > idle.count();
    const bool stalled = !output_.empty() && now - last_write_ns_ > idle.count();
    const bool draining = s_.w.shared().draining.load();
    if ((idle_out || draining) && !goaway_ && codec_.error().empty()) {
      goaway_ = true;  // once: the client finishes its streams and opens no more
      codec_.shutdown(0);
      kick();
      continue;
    }
    // Shutting down, the GOAWAY sent and no stream left: nothing more will come of it.
    const bool drained = draining && active_ == 0 && output_.empty() && !codec_.want_write();
    if ((idle_out && now - last_read_ns_ > 2 * idle.count()) || stalled || drained) {
      cut();
      break;
    }
  }
  watchdog_done_ = true;
  output_drained_.notify();  // run() may be waiting for this
}

asio::awaitable<void> h2_connection::linger() {
  // A close with unread bytes in the receive buffer sends a TCP RST, and the client's stack
  // then drops what it had not read yet: the GOAWAY that says why (a flooding client is still
  // sending). So: no more sending, then what the client still sends is read and dropped, for a
  // second at most (nginx's lingering close).
  boost::system::error_code ec;
  s_.client.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  s_.client.expires_after(std::chrono::seconds(1));
  std::array<char, 16 * 1024> sink;
  for (std::size_t total = 0; total < (1u << 20);) {
    auto [rec, n] = co_await s_.client.async_read_some(asio::buffer(sink), use_tuple);
    if (rec) break;
    total += n;
  }
}

void h2_connection::cut() {
  closing_ = true;
  boost::system::error_code ignored;
  s_.client.socket().close(ignored);
  tick_.cancel();
}

asio::awaitable<void> h2_connection::run() {
  last_read_ns_ = last_write_ns_ = core::steady_now_ns();
  // The handshake's deadline no longer applies: the watchdog keeps time from here.
  client_.expires_never();
  auto ex = s_.client.get_executor();
  asio::co_spawn(ex, write_loop(), asio::detached);
  asio::co_spawn(ex, watchdog(), asio::detached);
  co_await read_loop();
  // No more reading: the GOAWAY (if any) and what the streams still send go out, then the
  // streams end (their upstreams cut) and the connection closes.
  if (codec_.error().empty()) codec_.shutdown(0);
  kick();
  for (int i = 0; i < 100 && active_ > 0 && !writer_done_; ++i)
    co_await streams_done_.wait(std::chrono::milliseconds(100));
  closing_ = true;
  // The origin's HTTP/2 connection goes with it: its streams end (each stream's coroutine sees
  // its call closed).
  if (upstream_h2_) upstream_h2_->close(true);
  for (auto& w : streams_) {
    if (auto ss = w.lock()) {
      if (ss->upstream && ss->upstream->upstream) {
        boost::system::error_code ignored;
        ss->upstream->upstream->socket().close(ignored);
      }
      ss->changed.notify();
    }
  }
  while (active_ > 0)
    co_await streams_done_.wait(std::chrono::milliseconds(100));
  // The upstreams left idle serve the next tunnels to the origin (the worker's TLS pool).
  for (auto& u : idle_upstreams_)
    keep_tls_upstream(s_, *u);
  idle_upstreams_.clear();
  // The writer sends what is left (the GOAWAY among it) and ends, given two seconds.
  for (int i = 0; i < 40 && !writer_done_; ++i) {
    kick();
    co_await output_drained_.wait(std::chrono::milliseconds(50));
  }
  if (writer_done_ && s_.client.socket().is_open()) co_await linger();
  cut();
  // The writer and the watchdog refer to this object: both end before it does.
  while (!writer_done_ || !watchdog_done_) {
    kick();
    tick_.cancel();
    co_await output_drained_.wait(std::chrono::milliseconds(50));
  }
}

h2::limits h2_limits(const policy::model::limits& l) {
  h2::limits out;
  out.max_header_list_bytes =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(l.header_bytes, UINT32_MAX));
  return out;
}

asio::awaitable<void> serve_h2(session_context& s, tls_client& client, tunnel_context& t) {
  const auto active = s.w.shared().current_active();
  const auto& limits = active->snapshot().limits();
  auto c = std::make_shared<h2_connection>(s, client, t, h2_limits(limits));
  co_await c->run();
}

}  // namespace airlock::proxy
