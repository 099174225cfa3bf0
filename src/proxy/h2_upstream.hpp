#pragma once
// An HTTP/2 connection to an origin that picked "h2" in ALPN (the proxy offers h2 and http/1.1
// on an inspected tunnel's upstream when the rule's `protocols` carry h2): the nghttp2 client
// codec (h2/client_session.hpp) driven over the TLS stream, shared by the requests of one
// tunnel (an HTTP/1.1 client's, one after another; an HTTP/2 client's streams, side by side).
// Each request is one `h2_upstream_call`, a stream on it; h2_upstream_exchange.* runs an
// exchange over it.
//
// Coroutines on the session's executor: a reader feeds the codec what the origin sends (and
// stops while 256 KiB of output wait), a writer sends what the codec has and ends the
// connection when it has idled (no stream) for the idle timeout. A stream waits for a free slot
// under the origin's SETTINGS_MAX_CONCURRENT_STREAMS (bounded), for the origin's window to send
// its body (bounded: a zero-window stall resets the stream), and for its answer (bounded).
//
// @par Thread Safety
// Everything here runs on the session's executor.

#include "core/errc.hpp"
#include "h2/client_session.hpp"
#include "proxy/session_context.hpp"
#include "proxy/signal.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace airlock::proxy {

class h2_upstream;

// Where a refused request goes when its connection takes no more streams (the origin's GOAWAY):
// the tunnel's or client connection's HTTP/2 upstream as it is now, a new one if need be.
// Without one, `error` says why when connecting failed (the address guard's refusal among
// them), and stays ok when the origin no longer picks h2 or the client connection is closing.
struct h2_reconnected {
  h2_reconnected() = default;
  explicit h2_reconnected(std::shared_ptr<h2_upstream> up) : upstream(std::move(up)) {}
  h2_reconnected(core::errc why, std::string why_detail)
      : error(why), detail(std::move(why_detail)) {}

  std::shared_ptr<h2_upstream> upstream;
  core::errc error = core::errc::ok;
  std::string detail;
};
using h2_reconnect = std::function<boost::asio::awaitable<h2_reconnected>()>;

// The request body bytes that the calls begun on one connection keep to send again
// (h2_upstream_call), counted together: a client's many streams share one bound.
struct replay_budget {
  std::size_t used = 0;
};

// One request on an h2_upstream: a stream, or another when the origin refused it unprocessed
// (h2_upstream_call.cpp). Ending it (destroying it) before the origin ended the stream resets
// it (CANCEL). Readers take `*stream` anew after each wait until the response head came (the
// stream may have been renewed); after the head it stays.
struct h2_upstream_call {
  h2_upstream_call(std::shared_ptr<h2_upstream> c, std::shared_ptr<h2::client_stream> s,
                   h2::header_list fields, bool has_body, h2_reconnect reconnect,
                   std::chrono::steady_clock::duration open_limit);
  ~h2_upstream_call();
  h2_upstream_call(const h2_upstream_call&) = delete;
  h2_upstream_call& operator=(const h2_upstream_call&) = delete;

  std::shared_ptr<h2_upstream> conn;
  std::shared_ptr<h2::client_stream> stream;
  signal changed;  // head, body bytes, trailers, end, close, or room for the request body

  // Waits for the stream to change, at most `limit`. False on timeout.
  boost::asio::awaitable<bool> wait(std::chrono::steady_clock::duration limit);
  // Queues request body bytes (`last`: with the trailers, if any) and waits while more than
  // the stream's buffer is unsent. False when the stream ended, or the origin's window stayed
  // shut for `idle` (the stream is then reset).
  boost::asio::awaitable<bool> push(std::string_view data, bool last,
                                    std::chrono::milliseconds idle,
                                    const h2::header_list* trailers = nullptr);
  // `n` response body bytes went on: the origin may send that many more.
  void consume(std::size_t n);
  // The response head came: the request is not sent again, and its copy goes (its bytes back
  // to the connection's budget while the answer streams).
  void answered();
  void reset(std::uint32_t error_code);
  // How many times the request went again on a new stream.
  int renewals() const noexcept { return renewals_; }
  // Why the last renewal found no connection to go on (errc::ok: it did, or none was tried).
  core::errc renewal_error() const noexcept { return renewal_error_; }
  const std::string& renewal_detail() const noexcept { return renewal_detail_; }
  // RFC 9113 section 8.7: a stream reset with REFUSED_STREAM (also every stream above a
  // GOAWAY's last stream id, which nghttp2 closes so) was not processed, and its request "can
  // be safely retried". It goes again on a new stream, with the body bytes pushed so far, at
  // most max_renewals times and while those bytes are within replay_limit (256 KiB for a stream,
  // 1 MiB for all the calls begun on one connection). Either half of a
  // bridge may find the refusal; the other waits for the renewal to end.
  // wait() and push() do so themselves.
  boost::asio::awaitable<void> renew_if_refused();

 private:
  bool refused() const noexcept;
  void drop_replay();  // (its bytes given back to the budget)

  h2::header_list fields_;
  bool has_body_;
  h2_reconnect reconnect_;
  std::chrono::steady_clock::duration open_limit_;
  std::string replay_;  // the request body pushed so far, while the head has not come
  std::shared_ptr<replay_budget> budget_;  // (the first connection's, kept across renewals)
  bool replayable_ = true;
  bool ended_ = false;  // the request body's end (and trailers_) pushed
  h2::header_list trailers_;
  bool renewing_ = false;
  bool cancelled_ = false;  // reset by us: the request does not go again
  int renewals_ = 0;
  core::errc renewal_error_ = core::errc::ok;
  std::string renewal_detail_;
};

class h2_upstream final : public h2::client_observer,
                          public std::enable_shared_from_this<h2_upstream> {
 public:
  h2_upstream(tls_upstream stream, std::string upstream_text, const h2::client_limits& limits,
              std::chrono::milliseconds idle_timeout);
  ~h2_upstream() override;

  // Starts the reader and the writer (they hold the connection until it ends).
  void start();
  // A call for a request (see client_session::submit_request), waiting up to `limit` for a
  // free slot; `reconnect` for a refused request when this connection takes no more streams.
  // Null when the connection cannot take one.
  boost::asio::awaitable<std::unique_ptr<h2_upstream_call>> open(
      const h2::header_list& fields, bool has_body, std::chrono::steady_clock::duration limit,
      h2_reconnect reconnect = nullptr);
  // A stream alone, as open() waits for it. Null when the connection cannot take one.
  boost::asio::awaitable<std::shared_ptr<h2::client_stream>> open_stream(
      const h2::header_list& fields, bool has_body, std::chrono::steady_clock::duration limit);
  // Whether it may still carry new requests.
  bool usable() const noexcept { return !closed_ && codec_.usable(); }
  // GOAWAY, then the connection closes once its streams end (at once with `now`).
  void close(bool now = false);
  const std::string& text() const noexcept { return text_; }
  std::string_view error() const noexcept { return codec_.error(); }
  h2::client_session& codec() noexcept { return codec_; }
  void kick() { write_wanted_.notify(); }
  boost::asio::any_io_executor codec_executor();

  void on_activity(h2::client_stream& st) override;
  void on_connection() override;
  const std::shared_ptr<replay_budget>& replays() const noexcept { return replays_; }

 private:
  boost::asio::awaitable<void> read_loop();
  boost::asio::awaitable<void> write_loop();
  void cut();

  tls_upstream stream_;
  std::string text_;
  std::chrono::milliseconds idle_;
  h2::client_session codec_;
  std::string output_;
  signal write_wanted_;
  signal output_drained_;
  std::vector<boost::asio::steady_timer*> slot_waiters_;  // streams waiting for a free slot
  bool closed_ = false;   // no new streams; ends when the last one does
  bool cut_ = false;      // the socket is closed
  bool reading_ = false;  // the reader runs
  std::int64_t last_busy_ns_ = 0;
  std::shared_ptr<replay_budget> replays_ = std::make_shared<replay_budget>();
};

// The h2 client limits for a policy's limits (the response head's size, as for requests).
h2::client_limits h2_client_limits(const policy::model::limits& l);

}  // namespace airlock::proxy
