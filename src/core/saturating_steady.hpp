#pragma once
// A duration made a timer's expiry without overflow: std::chrono converts by multiplying in
// the target's representation (int64 nanoseconds for steady_clock), which is undefined
// behaviour past about 292 years, and a timer adds the result to now() as well.

#include <chrono>
#include <cstdint>

namespace airlock::core {

// `d` as a steady_clock duration, clamped to [0, 2^62 ns] (about 146 years) instead of
// overflowing int64 (undefined behaviour) in the conversion or when added to now(): for every
// duration that becomes a timer's expiry.
template <class Rep, class Period>
constexpr std::chrono::steady_clock::duration saturating_steady(
    std::chrono::duration<Rep, Period> d) noexcept {
  using ns = std::chrono::nanoseconds;
  using std::chrono::duration_cast;
  constexpr ns cap{std::int64_t{1} << 62};
  if (d <= d.zero()) return std::chrono::steady_clock::duration::zero();
  if (d >= duration_cast<std::chrono::duration<Rep, Period>>(cap)) return cap;
  return duration_cast<std::chrono::steady_clock::duration>(d);
}

}  // namespace airlock::core
