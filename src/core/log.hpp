#pragma once
// A small logging shim: one line per event on stderr, with time, level and component. Thread
// safe (each line is one write(2)). Never pass secret values to it.

#include "core/str_cat.hpp"

#include <string_view>

namespace airlock::core {

enum class log_level { debug = 0, info, warn, error };

void set_log_level(log_level level) noexcept;
log_level get_log_level() noexcept;
// Parses "debug", "info", "warn", "error"; false on anything else.
bool parse_log_level(std::string_view text, log_level& out) noexcept;
void log_line(log_level level, std::string_view component, std::string_view message) noexcept;

}  // namespace airlock::core

// The message arguments are concatenated only when the level is enabled.
#define AIRLOCK_LOG(level, component, ...)                                     \
  do {                                                                         \
    if (::airlock::core::log_level::level >= ::airlock::core::get_log_level()) \
      ::airlock::core::log_line(::airlock::core::log_level::level, component,  \
                                ::airlock::core::str_cat(__VA_ARGS__));        \
  } while (0)
