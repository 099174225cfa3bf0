#include "core/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <string>

namespace airlock::core {
namespace {
std::atomic<log_level> current_level{log_level::info};

constexpr std::string_view level_name(log_level l) {
  switch (l) {
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warn:
      return "warn";
    case log_level::error:
      return "error";
  }
  return "?";
}
}  // namespace

void set_log_level(log_level level) noexcept {
  current_level.store(level);
}
log_level get_log_level() noexcept {
  return current_level.load(std::memory_order_relaxed);
}

bool parse_log_level(std::string_view text, log_level& out) noexcept {
  for (auto l : {log_level::debug, log_level::info, log_level::warn, log_level::error}) {
    if (text == level_name(l)) {
      out = l;
      return true;
    }
  }
  return false;
}

void log_line(log_level level, std::string_view component, std::string_view message) noexcept {
  try {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[40];
    std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string line(stamp, n);
    line += str_cat('.', ms.count() < 100 ? (ms.count() < 10 ? "00" : "0") : "", ms.count(), "Z ",
                    level_name(level), ' ', component, ": ", message, '\n');
    // One write per line keeps lines whole when several threads log at once.
    std::string_view rest = line;
    while (!rest.empty()) {
      ssize_t w = ::write(STDERR_FILENO, rest.data(), rest.size());
      if (w <= 0) break;
      rest.remove_prefix(static_cast<std::size_t>(w));
    }
  } catch (...) {
    // Logging must never take the process down.
  }
}

}  // namespace airlock::core
