#pragma once
// A timer used as a condition variable on one thread: notify() wakes the waiter (or the next
// wait, if nobody waits yet). The HTTP/2 drivers' coroutines (h2_connection.hpp,
// h2_upstream.hpp) wake each other with it: single thread, no locks.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace airlock::proxy {

class signal {
 public:
  explicit signal(const boost::asio::any_io_executor& ex) : timer_(ex) {}
  void notify() {
    raised_ = true;
    timer_.cancel();
  }
  // True when notified, false when `limit` passed first.
  boost::asio::awaitable<bool> wait(std::chrono::steady_clock::duration limit);

 private:
  boost::asio::steady_timer timer_;
  bool raised_ = false;
};

}  // namespace airlock::proxy
