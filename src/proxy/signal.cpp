#include "proxy/signal.hpp"

#include "proxy/session_io.hpp"

#include <algorithm>

namespace airlock::proxy {

boost::asio::awaitable<bool> signal::wait(std::chrono::steady_clock::duration limit) {
  if (raised_) {
    raised_ = false;
    co_return true;
  }
  const auto seen = generation_;
  boost::asio::steady_timer timer(ex_);
  timer.expires_after(limit);
  waiters_.push_back(&timer);
  co_await timer.async_wait(use_tuple);
  std::erase(waiters_, &timer);
  co_return generation_ != seen;
}

}  // namespace airlock::proxy
