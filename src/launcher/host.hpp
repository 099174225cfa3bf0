#pragma once
// The host facts build_plan needs, read from the running process and its file system.

#include "launcher/plan.hpp"

namespace airlock::launcher {

// uid, gid, cwd, HOME (or the passwd entry), environ, realpath/stat, keytool on PATH.
// False with the failure recorded only if the current directory cannot be determined.
bool real_host_facts(host_facts& out);

}  // namespace airlock::launcher
