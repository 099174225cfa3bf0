#pragma once
// Sizes ("64KiB", "10MiB", "512") and durations ("5s", "250ms", "2m", "1h", "30d") as written
// in the policy file and on the command line.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace airlock::core {

// Accepts a non-negative integer with an optional suffix B, KB/KiB, MB/MiB, GB/GiB (KB means
// 1000, KiB 1024; K/M/G alone mean KiB/MiB/GiB as in most proxies' config). Nullopt on
// anything else, including overflow.
std::optional<std::uint64_t> parse_size(std::string_view text);

// Accepts an integer with suffix ms, s, m, h or d (24 h; a bare number means seconds), up to
// 2^42 ms (about 139 years, so it fits steady_clock nanoseconds with room to spare); nullopt
// above. Callers bound it further (and convert it for timers with
// core/saturating_steady.hpp).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace airlock::core
