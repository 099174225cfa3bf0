#pragma once
// Exit statuses of `airlock run` that are its own rather than CMD's. They follow timeout(1)
// and env(1), so scripts that already understand those understand these.

namespace airlock::launcher {

inline constexpr int exit_timeout = 124;         // --timeout reached; the tree was killed
inline constexpr int exit_launcher_error = 125;  // bad options, missing kernel feature, ...
inline constexpr int exit_cannot_exec = 126;     // CMD found but not executable
inline constexpr int exit_not_found = 127;       // CMD not found
inline constexpr int exit_killed = 137;          // 128 + SIGKILL: memory limit (OOM) or killed
// What a jail child exits with when any confinement step fails: the command never runs.
inline constexpr int kConfinementFailed = exit_launcher_error;

}  // namespace airlock::launcher
