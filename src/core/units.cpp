#include "core/units.hpp"

#include "core/ascii.hpp"

#include <charconv>
#include <limits>
#include <string>

namespace airlock::core {
namespace {

// Splits "123abc" into 123 and "abc"; fails without leading digits or on overflow.
bool split_number(std::string_view text, std::uint64_t& number, std::string_view& suffix) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc{} || end == text.data()) return false;
  suffix = text.substr(static_cast<std::size_t>(end - text.data()));
  while (!suffix.empty() && suffix.front() == ' ')
    suffix.remove_prefix(1);
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t n = 0;
  std::string_view suffix;
  if (!split_number(text, n, suffix)) return std::nullopt;
  struct unit {
    std::string_view name;
    std::uint64_t factor;
  };
  static constexpr unit units[] = {
      {"", 1},
      {"b", 1},
      {"k", 1ULL << 10},
      {"kib", 1ULL << 10},
      {"kb", 1000},
      {"m", 1ULL << 20},
      {"mib", 1ULL << 20},
      {"mb", 1000000},
      {"g", 1ULL << 30},
      {"gib", 1ULL << 30},
      {"gb", 1000000000},
  };
  for (const auto& u : units) {
    if (iequals(suffix, u.name)) {
      if (n > std::numeric_limits<std::uint64_t>::max() / u.factor) return std::nullopt;
      return n * u.factor;
    }
  }
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::uint64_t n = 0;
  std::string_view suffix;
  if (!split_number(text, n, suffix)) return std::nullopt;
  std::uint64_t factor = 0;
  if (suffix.empty() || suffix == "s")
    factor = 1000;
  else if (suffix == "ms")
    factor = 1;
  else if (suffix == "m")
    factor = 60'000;
  else if (suffix == "h")
    factor = 3'600'000;
  else if (suffix == "d")  // 24 h, a calendar day being no concern of a timeout
    factor = 86'400'000;
  else
    return std::nullopt;
  // About 139 years: as steady_clock nanoseconds (what a timer's expiry becomes) it is below
  // 2^62, so converting it, and adding it to now(), cannot overflow int64.
  constexpr std::uint64_t max_ms = std::uint64_t{1} << 42;
  if (n > max_ms / factor) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(n * factor));
}

}  // namespace airlock::core
