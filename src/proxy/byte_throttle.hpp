#pragma once
// Waits as a byte pace says (filters/rate_limit/byte_pace.hpp): a relay loop calls pace() with
// what it just read before passing it on, so a throttled transfer slows down instead of
// failing.

#include "core/steady_ns.hpp"
#include "filters/rate_limit/byte_pace.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace airlock::proxy {

struct byte_throttle {
  filters::rate_limit::byte_pace rate;

  explicit operator bool() const noexcept { return static_cast<bool>(rate); }
  std::size_t max_read() const noexcept { return rate.max_read; }
  // The most to read at once from a buffer of `size` bytes.
  std::size_t piece(std::size_t size) const noexcept {
    return rate ? std::min(size, rate.max_read) : size;
  }

  // Charges `bytes` and waits as long as the buckets say.
  boost::asio::awaitable<void> pace(std::size_t bytes) const {
    if (!rate || bytes == 0) co_return;
    const auto now = std::chrono::steady_clock::now();
    const std::int64_t wait = rate.charge(bytes, core::steady_ns(now));
    if (wait <= 0) co_return;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    timer.expires_at(now + std::chrono::nanoseconds(wait));
    co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
};

}  // namespace airlock::proxy
