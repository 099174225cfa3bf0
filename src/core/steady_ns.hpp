#pragma once
// The time base of the rate-limit plan (filters/rate_limit): steady-clock nanoseconds.

#include <chrono>
#include <cstdint>

namespace airlock::core {

inline std::int64_t steady_ns(std::chrono::steady_clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline std::int64_t steady_now_ns() noexcept {
  return steady_ns(std::chrono::steady_clock::now());
}

}  // namespace airlock::core
