#pragma once
// Awaits a filter's pending outcome (filters::pending: an answer from a shared store, a person's
// approval) on the session's own executor, under the session's own timeout. The outcome may be
// delivered from any thread, before or after the wait ends; the shared state holds no I/O
// object, so a late answer after the session (or its io_context) is gone is harmless.

#include "filters/filter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace airlock::proxy {

inline boost::asio::awaitable<filters::verdict> await_pending(
    filters::pending& p, std::chrono::milliseconds session_limit) {
  namespace asio = boost::asio;
  // A held request waits for a person (its own timeout); anything else for the session's.
  const std::chrono::milliseconds timeout = p.wait_limit(session_limit);
  struct state {
    std::optional<filters::verdict> outcome;
    asio::steady_timer* timer = nullptr;  // null once the session stopped waiting
  };
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  timer.expires_after(timeout);
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
  // The outcome may have been posted already: it runs after this wait has begun.
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (st->outcome) co_return std::move(*st->outcome);
  p.cancel();
  co_return p.timed_out(timeout);
}

}  // namespace airlock::proxy
