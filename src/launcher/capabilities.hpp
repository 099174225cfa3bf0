#pragma once
// Privileges of the final process (capabilities(7)): no_new_privs, and no capability in any
// set — bounding, ambient, effective, permitted, inheritable — with the securebits locked so
// that executing a set-uid or root-owned program cannot bring any back.

namespace airlock::launcher {

// prctl(PR_SET_NO_NEW_PRIVS): execve can never add privileges (also required to load a
// seccomp filter without CAP_SYS_ADMIN).
bool set_no_new_privs();

// Drops every capability; true only if capget afterwards shows empty sets.
bool drop_all_capabilities();

}  // namespace airlock::launcher
