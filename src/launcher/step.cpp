#include "launcher/step.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"

#include <fcntl.h>
#include <unistd.h>

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
  const int err = errno;  // (kept: callers read it after, as after step_failed)
  try {
    last_error.assign(message);
    AIRLOCK_LOG(debug, "launcher", last_error);
  } catch (...) {
  }
  errno = err;
  return false;
}

const std::string& last_step_error() noexcept {
  return last_error;
}

bool write_whole_file(const std::string& path, std::string_view content, int create_flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | create_flags, 0644);
  if (fd < 0) return step_failed(core::str_cat("open(", path, ", O_CREAT)"));
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      errno = n == 0 ? EIO : err;
      return step_failed(core::str_cat("write(", path, ')'));
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::close(fd) != 0) return step_failed(core::str_cat("close(", path, ')'));
  return true;
}

}  // namespace airlock::launcher
