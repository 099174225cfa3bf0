#include "proxy/signal.hpp"

#include "proxy/session_io.hpp"

namespace airlock::proxy {

boost::asio::awaitable<bool> signal::wait(std::chrono::steady_clock::duration limit) {
  if (!raised_) {
    timer_.expires_after(limit);
    co_await timer_.async_wait(use_tuple);
  }
  const bool raised = raised_;
  raised_ = false;
  co_return raised;
}

}  // namespace airlock::proxy
