#pragma once
// A condition on one thread, for coroutines: notify() wakes every coroutine waiting in wait()
// (or, when none waits, the next wait). The HTTP/2 drivers' coroutines (h2_connection.hpp,
// h2_upstream.hpp) wake each other with it: single thread, no locks. Each waiter has a timer of
// its own, so two coroutines may wait on one signal at once (an HTTP/2 stream bridged to an
// HTTP/2 origin waits for the client's body and the client's window side by side); with one
// shared timer each new wait would cancel the other's.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

namespace airlock::proxy {

class signal {
 public:
  explicit signal(const boost::asio::any_io_executor& ex) : ex_(ex) {}
  void notify() {
    if (waiters_.empty()) {
      raised_ = true;
      return;
    }
    ++generation_;
    for (auto* t : waiters_)
      t->cancel();
  }
  // True when notified, false when `limit` passed first.
  boost::asio::awaitable<bool> wait(std::chrono::steady_clock::duration limit);

 private:
  boost::asio::any_io_executor ex_;
  std::vector<boost::asio::steady_timer*> waiters_;
  std::uint64_t generation_ = 0;
  bool raised_ = false;  // notified while nobody waited
};

}  // namespace airlock::proxy
