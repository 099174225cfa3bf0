#include "launcher/capabilities.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace airlock::launcher {

bool set_no_new_privs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return step_failed("prctl(PR_SET_NO_NEW_PRIVS)");
  return true;
}

bool drop_all_capabilities() {
  // Bounding set first: dropping needs CAP_SETPCAP, which goes with the capset below. EINVAL
  // marks the first capability number this kernel does not know.
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      return step_failed(core::str_cat("prctl(PR_CAPBSET_DROP, ", cap, ')'));
    }
  }
  // Root inside the user namespace would regain permitted capabilities on execve; NOROOT
  // stops that, and the locks keep the program from undoing it (capabilities(7)).
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0)
    return step_failed("prctl(PR_SET_SECUREBITS)");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return step_failed("prctl(PR_CAP_AMBIENT_CLEAR_ALL)");

  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return step_failed("capset(all empty)");

  // Trust, but verify: a capability left anywhere means the jail is not what we promise.
  __user_cap_data_struct check[_LINUX_CAPABILITY_U32S_3] = {};
  header = {_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capget, &header, check) != 0) return step_failed("capget");
  for (const auto& d : check) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0)
      return step_failed_msg("capget: capabilities remain after capset");
  }
  for (int cap = 0; cap <= 63; ++cap) {
    const int r = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (r < 0) break;
    if (r == 1) return step_failed_msg(core::str_cat("capability ", cap, " left in bounding set"));
  }
  return true;
}

}  // namespace airlock::launcher
