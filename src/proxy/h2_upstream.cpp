// The HTTP/2 connection to an origin (h2_upstream.hpp): reader, writer, and the calls on it.
#include "proxy/h2_upstream.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"
#include "policy/model.hpp"
#include "proxy/session_io.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <vector>

namespace airlock::proxy {
namespace asio = boost::asio;

namespace {
// As on the client side (h2_session.cpp): output sent at once, and the most the reader lets
// pile up before it stops reading (a PING flood from an origin that does not read stops here).
constexpr std::size_t write_chunk = 64 * 1024;
constexpr std::size_t output_high_water = 256 * 1024;
}  // namespace

h2::client_limits h2_client_limits(const policy::model::limits& l) {
  h2::client_limits out;
  out.max_header_list_bytes =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(l.header_bytes, UINT32_MAX));
  return out;
}

h2_upstream::h2_upstream(tls_upstream stream, std::string upstream_text,
                         const h2::client_limits& limits, std::chrono::milliseconds idle_timeout)
    : stream_(std::move(stream)),
      text_(std::move(upstream_text)),
      idle_(idle_timeout),
      codec_(limits, *this),
      write_wanted_(stream_.get_executor()),
      output_drained_(stream_.get_executor()) {}

h2_upstream::~h2_upstream() = default;

asio::any_io_executor h2_upstream::codec_executor() {
  return stream_.get_executor();
}

void h2_upstream::start() {
  last_busy_ns_ = core::steady_now_ns();
  stream_.expires_never();
  reading_ = true;
  asio::co_spawn(stream_.get_executor(), read_loop(), asio::detached);
  asio::co_spawn(stream_.get_executor(), write_loop(), asio::detached);
}

void h2_upstream::on_activity(h2::client_stream& st) {
  if (st.user) static_cast<h2_upstream_call*>(st.user)->changed.notify();
}

void h2_upstream::on_connection() {
  for (auto* t : slot_waiters_)
    t->cancel();
  write_wanted_.notify();
}

asio::awaitable<std::shared_ptr<h2::client_stream>> h2_upstream::open_stream(
    const h2::header_list& fields, bool has_body, std::chrono::steady_clock::duration limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  // The origin's SETTINGS_MAX_CONCURRENT_STREAMS: wait for a stream to end (bounded). Each
  // waiter has a timer of its own (one shared timer would have each new wait cancel the others'),
  // and on_connection() wakes them all.
  if (usable() && !codec_.can_open()) {
    asio::steady_timer timer(stream_.get_executor());
    slot_waiters_.push_back(&timer);
    while (usable() && !codec_.can_open() && std::chrono::steady_clock::now() < deadline) {
      timer.expires_at(deadline);
      co_await timer.async_wait(use_tuple);
    }
    std::erase(slot_waiters_, &timer);
  }
  std::shared_ptr<h2::client_stream> st;
  if (!usable() || !codec_.can_open()) co_return st;
  st = codec_.submit_request(fields, has_body);
  if (!st) co_return st;
  last_busy_ns_ = core::steady_now_ns();
  kick();
  co_return st;
}

asio::awaitable<std::unique_ptr<h2_upstream_call>> h2_upstream::open(
    const h2::header_list& fields, bool has_body, std::chrono::steady_clock::duration limit,
    h2_reconnect reconnect) {
  std::unique_ptr<h2_upstream_call> call;
  auto st = co_await open_stream(fields, has_body, limit);
  if (!st) co_return call;
  call = std::make_unique<h2_upstream_call>(shared_from_this(), std::move(st), fields, has_body,
                                            std::move(reconnect), limit);
  co_return call;
}

void h2_upstream::close(bool now) {
  if (!closed_) {
    closed_ = true;
    if (!cut_) codec_.shutdown(0);
  }
  if (now || codec_.open_streams() == 0) {
    // The GOAWAY goes out first when the writer gets to it; then the socket closes.
    kick();
  }
  if (now) cut();
}

void h2_upstream::cut() {
  if (cut_) return;
  cut_ = true;
  closed_ = true;
  boost::system::error_code ignored;
  stream_.socket().close(ignored);
  codec_.abandon(NGHTTP2_CANCEL);
  write_wanted_.notify();
  output_drained_.notify();
  for (auto* t : slot_waiters_)
    t->cancel();
}

asio::awaitable<void> h2_upstream::read_loop() {
  auto self = shared_from_this();
  std::array<char, 16 * 1024> buf;
  while (!cut_ && codec_.want_read()) {
    while (output_.size() > output_high_water && !cut_)
      co_await output_drained_.wait(std::chrono::seconds(1));
    if (cut_) break;
    auto [ec, n] = co_await stream_.async_read_some(asio::buffer(buf), use_tuple);
    if (ec) {
      if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated && !cut_)
        AIRLOCK_LOG(info, "h2", "HTTP/2 origin ", text_, ": ", ec.message());
      break;
    }
    last_busy_ns_ = core::steady_now_ns();
    const bool ok = codec_.recv({buf.data(), n});
    kick();
    if (!ok) {
      AIRLOCK_LOG(info, "h2", "HTTP/2 origin ", text_, " ended: ", codec_.error());
      // The GOAWAY that says why goes out before the socket closes.
      for (int i = 0; i < 20 && !output_.empty() && !cut_; ++i)
        co_await output_drained_.wait(std::chrono::milliseconds(50));
      break;
    }
  }
  reading_ = false;
  cut();
}

asio::awaitable<void> h2_upstream::write_loop() {
  auto self = shared_from_this();
  while (!cut_) {
    if (!codec_.fill_output(output_, write_chunk)) output_.clear();
    if (output_.empty()) {
      output_drained_.notify();
      const auto now = core::steady_now_ns();
      if (codec_.open_streams() > 0) last_busy_ns_ = now;
      // Done: asked to close (or GOAWAY from the origin) and no stream left; or idle.
      const bool idle = now - last_busy_ns_ > std::chrono::nanoseconds(idle_).count();
      if (codec_.open_streams() == 0 && (closed_ || !codec_.usable() || idle)) break;
      co_await write_wanted_.wait(std::min<std::chrono::steady_clock::duration>(
          idle_ / 2 + std::chrono::milliseconds(1), std::chrono::seconds(5)));
      continue;
    }
    auto [ec, n] = co_await asio::async_write(stream_, asio::buffer(output_), use_tuple);
    if (ec) break;
    output_.clear();
  }
  cut();
}

}  // namespace airlock::proxy
