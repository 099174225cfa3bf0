#pragma once
// Helpers shared by the rate_limit tests: policy `rate:` blocks and agent specs built by hand,
// and a controllable clock (plain numbers: nothing in the library reads a clock).

#include "filters/rate_limit/registry.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace airlock::filters::rate_limit::test {

inline constexpr std::int64_t ms = 1'000'000;
inline constexpr std::int64_t s = 1'000 * ms;
inline constexpr std::int64_t hour = 3'600 * s;
inline constexpr std::int64_t t0 = 86'400 * s + 12'345;

inline policy::model::rate per_second(std::uint64_t n, std::uint64_t burst = 0) {
  policy::model::rate r;
  r.requests = n;
  r.per = std::chrono::seconds(1);
  r.requests_key = "requests_per_second";
  r.burst = burst;
  return r;
}

inline policy::model::rate per_minute(std::uint64_t n, std::uint64_t burst = 0) {
  policy::model::rate r = per_second(n, burst);
  r.per = std::chrono::minutes(1);
  r.requests_key = "requests_per_minute";
  return r;
}

inline rule_spec rule(std::string name, policy::model::rate r = {}) {
  rule_spec spec;
  spec.name = std::move(name);
  spec.rate = std::move(r);
  return spec;
}

inline agent_spec agent(std::string name, policy::model::rate r = {},
                        std::vector<rule_spec> rules = {}, policy::model::breaker b = {}) {
  agent_spec spec;
  spec.name = std::move(name);
  spec.rate = std::move(r);
  spec.rules = std::move(rules);
  spec.breaker = b;
  return spec;
}

inline policy::model::breaker breaker_of(std::uint32_t max, std::chrono::milliseconds window,
                                         std::chrono::milliseconds cooldown) {
  policy::model::breaker b;
  b.max_failures = max;
  b.window = window;
  b.cooldown = cooldown;
  return b;
}

// Admissions that succeed at `now` (each released at once), up to `limit`.
inline int admit_all(const plan& p, std::size_t agent, std::size_t rule, std::int64_t now,
                     int limit = 100'000) {
  int n = 0;
  while (n < limit && p.admit(agent, rule, now).admitted())
    ++n;
  return n;
}

}  // namespace airlock::filters::rate_limit::test
