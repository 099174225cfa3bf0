#pragma once
// How fast a body (or a tunnel) may move for an agent's byte rates (`upload_bytes_per_second`,
// `download_bytes_per_second`, and the hourly byte quota that counts the same bytes). A relay
// loop charges what it just read and waits as long as charge() says before passing it on, so
// a throttled transfer slows down instead of failing. Reads are kept small enough that one read
// never buys a long sleep (a smooth rate rather than bursts and pauses). No I/O here: the
// session does the waiting.
//
// @par Thread Safety
// A copyable value; charge() may be called from any thread (the plan is lock-free).

#include "filters/rate_limit/plan.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace airlock::filters::rate_limit {

struct byte_pace {
  const plan* rates = nullptr;
  std::size_t agent = 0;
  std::size_t rule = plan::no_rule;
  direction dir = direction::download;
  std::size_t max_read = 64 * 1024;  // bytes per read, about 1/8 s at the slowest byte rate

  // A pace for this agent and rule in this direction, or one that is off (rates null) when
  // neither sets byte limits, so unthrottled transfers pay nothing.
  static byte_pace for_exchange(const plan& p, std::size_t agent, std::size_t rule, direction dir) {
    byte_pace t;
    if (agent >= p.agent_count()) return t;
    const auto& a = p.agents()[agent];
    const rate_limits* r =
        rule < a.rules.size() && a.rules[rule].state ? &a.rules[rule].limits : nullptr;
    if (!a.limits.bytes && !(r && r->bytes)) return t;
    t.rates = &p;
    t.agent = agent;
    t.rule = rule;
    t.dir = dir;
    const bool up = dir == direction::upload;
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

  explicit operator bool() const noexcept { return rates != nullptr; }

  // Charges `bytes` and returns how many nanoseconds to wait before passing them on.
  std::int64_t charge(std::size_t bytes, std::int64_t now_ns) const noexcept {
    if (!rates || bytes == 0) return 0;
    return rates->throttle(agent, rule, dir, bytes, now_ns);
  }
};

}  // namespace airlock::filters::rate_limit
