#pragma once
// Paces a body or tunnel to an agent's byte rates (`upload_bytes_per_second`,
// `download_bytes_per_second`, and the hourly byte quota that counts the same bytes). A relay
// loop asks how long to wait before passing on what it just read and sleeps that long, so a
// throttled transfer slows down instead of failing. Reads are also kept small enough that one
// read never buys a long sleep (a smooth rate rather than bursts and pauses).

#include "filters/rate_limit/plan.hpp"
#include "proxy/steady_ns.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace airlock::proxy {

struct byte_throttle {
  const filters::rate_limit::plan* plan = nullptr;
  std::size_t agent = 0;
  std::size_t rule = filters::rate_limit::plan::no_rule;
  filters::rate_limit::direction dir = filters::rate_limit::direction::download;
  std::size_t max_read = 64 * 1024;  // bytes per read, about 1/8 s at the slowest byte rate

  // A throttle for this agent and rule in this direction, or one that is off (plan null) when
  // neither sets byte limits, so unthrottled transfers pay nothing.
  static byte_throttle for_exchange(const filters::rate_limit::plan& plan, std::size_t agent,
                                    std::size_t rule, filters::rate_limit::direction dir) {
    byte_throttle t;
    if (agent >= plan.agent_count()) return t;
    const auto& a = plan.agents()[agent];
    const filters::rate_limit::rate_limits* r =
        rule < a.rules.size() && a.rules[rule].state ? &a.rules[rule].limits : nullptr;
    if (!a.limits.bytes && !(r && r->bytes)) return t;
    t.plan = &plan;
    t.agent = agent;
    t.rule = rule;
    t.dir = dir;
    const bool up = dir == filters::rate_limit::direction::upload;
    std::uint64_t slowest = 0;
    for (const auto* l : {&a.limits, r}) {
      if (!l) continue;
      const std::uint64_t rate =
          up ? l->source.upload_bytes_per_second : l->source.download_bytes_per_second;
      if (rate && (!slowest || rate < slowest)) slowest = rate;
    }
    if (slowest)
      t.max_read = static_cast<std::size_t>(std::clamp<std::uint64_t>(slowest / 8, 512, 64 * 1024));
    return t;
  }

  explicit operator bool() const noexcept { return plan != nullptr; }

  // Charges `bytes` and waits as long as the buckets say.
  boost::asio::awaitable<void> pace(std::size_t bytes) const {
    if (!plan || bytes == 0) co_return;
    const auto now = std::chrono::steady_clock::now();
    const std::int64_t wait = plan->throttle(agent, rule, dir, bytes, steady_ns(now));
    if (wait <= 0) co_return;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    timer.expires_at(now + std::chrono::nanoseconds(wait));
    co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
};

}  // namespace airlock::proxy
