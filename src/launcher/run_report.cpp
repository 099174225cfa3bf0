// What `airlock run` says about itself: --verbose's account of the plan, and durations.
#include "core/str_cat.hpp"
#include "launcher/run_jail.hpp"

#include <chrono>
#include <string>

namespace airlock::launcher::run_detail {

using core::str_cat;

std::string format_ms(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return str_cat(ms.count() / 1000, 's');
  return str_cat(ms.count(), "ms");
}

// --verbose: where the jail's writes go, which mounts apply, what was dropped.
void say_plan(const plan& p) {
  for (const auto& s : p.mounts)
    say(str_cat("plan: ", describe(s)));
  switch (p.home.mode) {
    case home_mode::layer:
      say(str_cat("home: ", p.home.path, " with a private writable layer (tmpfs, ", p.tmpfs_bytes,
                  " bytes): writes there are discarded at exit"));
      break;
    case home_mode::dir:
      say(str_cat("home: ", p.home.path, " is ", p.home.source, ": writes there are kept"));
      break;
    case home_mode::scratch:
      say(str_cat("home: ", p.home.path, " (no home on the host): an empty tmpfs, discarded"));
      break;
  }
  say(str_cat("writes: the work directory ", p.workdir,
              " and --rw paths go to the host; /tmp, /var/tmp, /dev/shm (tmpfs, ", p.tmpfs_bytes,
              " bytes each) are discarded"));
  if (!p.env.dropped.empty()) {
    std::string names;
    for (const auto& n : p.env.dropped)
      names += str_cat(names.empty() ? "" : " ", n);
    say(str_cat("environment: dropped secret-looking ", names));
  }
}

}  // namespace airlock::launcher::run_detail
