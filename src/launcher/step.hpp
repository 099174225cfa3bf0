#pragma once
// How confinement steps report failure (nsjail style): a step is a function returning bool;
// on failure it calls step_failed("syscall(arg)"), which records "syscall(arg): strerror(errno)"
// as the last error, logs it at debug level, and returns false. The caller passes the last
// error up (to the parent, over the sync channel) and exits; nobody retries half a jail.

#include <string>
#include <string_view>

namespace airlock::launcher {

// Records what failed with the current errno. Always returns false.
bool step_failed(std::string_view what) noexcept;
// Records a failure that has no errno. Always returns false.
bool step_failed_msg(std::string_view message) noexcept;
// The last recorded failure of this thread.
const std::string& last_step_error() noexcept;

// Creates a file (mode 0644; `create_flags` adds O_EXCL or O_TRUNC) and writes all of
// `content`, retrying short writes; a failure is a step failure naming the call.
bool write_whole_file(const std::string& path, std::string_view content, int create_flags);

}  // namespace airlock::launcher
