#pragma once
// Awaits a filter's pending outcome (filters::pending: an answer from a shared store, a person's
// approval) on the session's own executor, under the session's own timeout. The outcome may be
// delivered from any thread, before or after the wait ends; the shared state holds no I/O
// object, so a late answer after the session (or its io_context) is gone is harmless.
//
// A wait that watches its client (pending::watches_client: a held request) asks every half
// second whether the client is gone (an HTTP/1.1 client closed its socket; an HTTP/2 client
// reset the stream or closed the connection): then the wait is abandoned (pending::abandon
// drops the hold from the pending approvals) rather than kept until an operator decides on a
// request nobody will receive, or it times out. The outcome passes pending::settle on the
// session's executor before the chain goes on (a held request checks the kill switch again).

#include "core/errc.hpp"
#include "filters/filter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace airlock::proxy {

// True when the peer of the connected socket `fd` closed its connection (FIN or RST). Linux
// poll(2): POLLRDHUP is "stream socket peer closed connection, or shut down writing half of
// connection", reported even while unread bytes (a pipelined request) wait in the buffer.
inline bool client_closed(int fd) noexcept {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// `client_gone`: whether the client is gone (see above); empty: not watched.
inline boost::asio::awaitable<filters::verdict> await_pending(
    filters::pending& p, std::chrono::milliseconds session_limit,
    std::function<bool()> client_gone = {}) {
  namespace asio = boost::asio;
  using clock = std::chrono::steady_clock;
  // A held request waits for a person (its own timeout); anything else for the session's.
  const std::chrono::milliseconds timeout = p.wait_limit(session_limit);
  const bool watch = client_gone && p.watches_client();
  constexpr std::chrono::milliseconds look_every{500};
  struct state {
    std::optional<filters::verdict> outcome;
    asio::steady_timer* timer = nullptr;  // null once the session stopped waiting
  };
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  auto st = std::make_shared<state>();
  st->timer = &timer;
  // However this frame ends (resumed, or destroyed with its io_context), a late outcome must
  // no longer reach the timer.
  struct detach {
    state& s;
    ~detach() { s.timer = nullptr; }
  } detached{*st};
  p.start([st, executor](filters::verdict v) {
    asio::post(executor, [st, v = std::move(v)]() mutable {
      if (!st->timer || st->outcome) return;
      st->outcome = std::move(v);
      st->timer->cancel();
    });
  });
  const auto deadline = clock::now() + timeout;
  // Bounded: each turn waits until the deadline or for look_every, whichever comes first.
  for (;;) {
    const auto now = clock::now();
    if (now >= deadline) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    timer.expires_after(watch ? std::min(left, look_every) : left);
    // The outcome may have been posted already: it runs after this wait has begun.
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (st->outcome) co_return p.settle(std::move(*st->outcome));
    if (watch && client_gone()) {
      p.abandon();
      co_return filters::verdict::refuse(
          core::errc::approval_abandoned,
          "the client closed its connection while the request was held");
    }
  }
  if (st->outcome) co_return p.settle(std::move(*st->outcome));
  p.cancel();
  co_return p.timed_out(timeout);
}

}  // namespace airlock::proxy
