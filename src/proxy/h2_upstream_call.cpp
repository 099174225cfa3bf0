// One request on an HTTP/2 upstream (h2_upstream.hpp): its stream, the request body pushed to
// it, and the renewal of a stream the origin refused unprocessed.
#include "core/log.hpp"
#include "proxy/h2_upstream.hpp"

#include <nghttp2/nghttp2.h>

namespace airlock::proxy {
namespace asio = boost::asio;

namespace {
// Request body bytes queued per stream before the producer waits for the origin's window.
constexpr std::size_t stream_buffer = 64 * 1024;
// A refused request goes again at most this often (an origin that refuses every stream does
// not keep it in a loop) ...
constexpr int max_renewals = 3;
// ... and only while the body bytes it pushed so far are at most this many. A refusal usually
// comes as the origin reads the stream's HEADERS, when the bytes pushed are the stream buffer
// and the initial window; an origin may refuse later (the bound then ends the retries). The
// copy is kept until the response head comes: up to this much per stream in flight.
constexpr std::size_t replay_limit = 256 * 1024;
// And this much for all the calls begun on one connection: past it, a stream's copy is dropped
// (that request is then not sent again) rather than the proxy holding 256 KiB for every stream
// a client opens.
constexpr std::size_t connection_replay_limit = 1024 * 1024;
}  // namespace

h2_upstream_call::h2_upstream_call(std::shared_ptr<h2_upstream> c,
                                   std::shared_ptr<h2::client_stream> s, h2::header_list fields,
                                   bool has_body, h2_reconnect reconnect,
                                   std::chrono::steady_clock::duration open_limit)
    : conn(std::move(c)),
      stream(std::move(s)),
      changed(conn->codec_executor()),
      fields_(std::move(fields)),
      has_body_(has_body),
      reconnect_(std::move(reconnect)),
      open_limit_(open_limit),
      budget_(conn->replays()) {
  stream->user = this;
}

h2_upstream_call::~h2_upstream_call() {
  drop_replay();
  stream->user = nullptr;
  // Not ended both ways: the origin is told to stop (RFC 9113 section 8.1: a response that
  // ended before the request body did gets RST_STREAM NO_ERROR from the client too).
  if (!stream->closed) {
    conn->codec().reset(*stream, stream->body_done ? NGHTTP2_NO_ERROR : NGHTTP2_CANCEL);
    conn->kick();
  }
}

bool h2_upstream_call::refused() const noexcept {
  return stream->closed && !stream->head_done && stream->close_error == NGHTTP2_REFUSED_STREAM &&
         !cancelled_;
}

asio::awaitable<void> h2_upstream_call::renew_if_refused() {
  // The other half renews: wait for it (the renewal ends with a notify).
  while (renewing_)
    co_await changed.wait(open_limit_);
  if (!refused() || !replayable_ || renewals_ >= max_renewals) co_return;
  renewing_ = true;
  ++renewals_;
  auto target = conn;
  if (!target->usable() && reconnect_) {
    auto next = co_await reconnect_();
    target = std::move(next.upstream);
    renewal_error_ = next.error;
    renewal_detail_ = std::move(next.detail);
  }
  std::shared_ptr<h2::client_stream> fresh;
  if (target && !cancelled_) fresh = co_await target->open_stream(fields_, has_body_, open_limit_);
  if (fresh && !cancelled_) {
    AIRLOCK_LOG(debug, "h2", "HTTP/2 origin ", target->text(), " refused stream ", stream->id,
                " unprocessed; the request goes again as stream ", fresh->id,
                target == conn ? "" : " on a new connection");
    stream->user = nullptr;
    conn = std::move(target);
    stream = std::move(fresh);
    stream->user = this;
    if (has_body_) {
      stream->out = replay_;
      stream->out_end = ended_;
      if (ended_) stream->out_trailers = trailers_;
      conn->codec().resume(*stream);
    }
    conn->kick();
  } else if (fresh) {
    target->codec().reset(*fresh, NGHTTP2_CANCEL);  // cancelled while it opened
    target->kick();
  } else {
    replayable_ = false;  // no stream to be had: final, the other half does not try again
  }
  renewing_ = false;
  changed.notify();
}

asio::awaitable<bool> h2_upstream_call::wait(std::chrono::steady_clock::duration limit) {
  const bool woke = co_await changed.wait(limit);
  co_await renew_if_refused();
  co_return woke;
}

asio::awaitable<bool> h2_upstream_call::push(std::string_view data, bool last,
                                             std::chrono::milliseconds idle,
                                             const h2::header_list* trailers) {
  co_await renew_if_refused();
  if (stream->closed) co_return false;
  if (stream->head_done || replay_.size() + data.size() > replay_limit ||
      budget_->used + data.size() > connection_replay_limit) {
    replayable_ = false;  // answered (no refusal can come) or too much to send again
    drop_replay();
  }
  if (replayable_) {
    replay_.append(data);
    budget_->used += data.size();
  }
  stream->out.append(data);
  if (last && trailers) {
    stream->out_trailers = *trailers;
    if (replayable_) trailers_ = *trailers;
  }
  stream->out_end = last;
  ended_ = last;
  conn->codec().resume(*stream);
  conn->kick();
  for (;;) {
    if (stream->closed) co_await renew_if_refused();
    if (stream->closed) co_return false;
    if (stream->out_pending() <= stream_buffer) co_return true;
    const bool woke = co_await changed.wait(idle);
    // (Not woken while the other half renews the stream: that wait is bounded by open_limit_.)
    if (!woke && !renewing_) break;
  }
  // A zero-window stall: the origin does not take the body.
  reset(NGHTTP2_CANCEL);
  co_return false;
}

void h2_upstream_call::answered() {
  replayable_ = false;
  drop_replay();
}

void h2_upstream_call::drop_replay() {
  budget_->used -= replay_.size();
  std::string().swap(replay_);
}

void h2_upstream_call::consume(std::size_t n) {
  conn->codec().consume(*stream, n);
  conn->kick();
}

void h2_upstream_call::reset(std::uint32_t error_code) {
  cancelled_ = true;
  conn->codec().reset(*stream, error_code);
  conn->kick();
}

}  // namespace airlock::proxy
