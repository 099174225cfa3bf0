#include "launcher/step.hpp"

#include "core/log.hpp"

#include <cerrno>
#include <cstring>

namespace airlock::launcher {
namespace {
thread_local std::string last_error;
}

bool step_failed(std::string_view what) noexcept {
  const int err = errno;
  try {
    last_error = core::str_cat(what, ": ", std::strerror(err));
    AIRLOCK_LOG(debug, "launcher", last_error);
  } catch (...) {
  }
  errno = err;
  return false;
}

bool step_failed_msg(std::string_view message) noexcept {
  try {
    last_error.assign(message);
    AIRLOCK_LOG(debug, "launcher", last_error);
  } catch (...) {
  }
  return false;
}

const std::string& last_step_error() noexcept {
  return last_error;
}

}  // namespace airlock::launcher
