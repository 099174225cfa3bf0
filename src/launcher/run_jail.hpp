#pragma once
// Private to `airlock run` (run.cpp, run_jail.cpp): the launcher's side of the run is in
// run.cpp (plan, clone, id maps, limits, the relay, the wait), the jail's in run_jail.cpp (its
// init, PID 1 in the jail, which sets the jail up and forks the command, PID 2).

#include "launcher/mounts.hpp"
#include "launcher/plan.hpp"
#include "launcher/self_test.hpp"

#include <signal.h>

#include <chrono>
#include <string>
#include <string_view>

namespace airlock::launcher::run_detail {

// Signals passed on to the command. The jail is in a session of its own (terminal.hpp), so
// the caller's terminal signals only the launcher, which passes them on; SIGWINCH instead
// resizes the command's pty when it has one.
inline constexpr int forwarded_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                            SIGUSR1, SIGUSR2, SIGWINCH};

// "airlock run: MESSAGE" on stderr, with one write(2) (also from the jail's processes).
void say(std::string_view message);
// The forwarded signals and SIGCHLD: blocked in the launcher before clone, taken by the
// launcher's signalfd and by the jail's init with sigwaitinfo.
sigset_t jail_signal_set();
// A wait status as an exit code: the command's, or 128+N for signal N.
int status_to_code(int status);
// --verbose (run_report.cpp): where the jail's writes go, which mounts apply, what was dropped.
void say_plan(const plan& p);
// "5s" or "1500ms".
std::string format_ms(std::chrono::milliseconds ms);

// The jail's init: everything inside the new namespaces up to the command's exec, then the
// init's wait loop. `sock` is its end of the channel to the launcher (channel.hpp).
[[noreturn]] void jail_main(const plan& p, mount_context& ctx, int sock,
                            const self_test_setup& probes);

}  // namespace airlock::launcher::run_detail
