#pragma once
// Namespaces and identity (user_namespaces(7), pid_namespaces(7)): creating the jail's
// first process in new namespaces, writing its uid/gid maps from outside, and naming the
// kernel feature that is missing when creation fails.

#include <sys/types.h>

#include <string>

namespace airlock::launcher {

struct plan;

// clone(2) with the plan's namespace flags and SIGCHLD, fork-like (no new stack): returns the
// child's pid in the parent, 0 in the child, -1 with errno on failure.
pid_t clone_into_namespaces(int flags) noexcept;

// From the parent: setgroups, uid_map and gid_map of the child (which waits until they are
// written). One step; false with last_step_error() set on failure.
bool write_id_maps(pid_t child, const plan& p);

// In the child, once the maps exist: drop supplementary groups (root only), become the inside
// uid/gid, set the host name, and enter a new cgroup namespace (optional: older kernels lack
// it) so that /proc/self/cgroup shows the jail's cgroup as "/".
bool become_inside_identity(const plan& p);
bool set_hostname(const std::string& name);
bool enter_cgroup_namespace();

// Why clone(flags) failed with err, naming the namespace and the knob that controls it.
// Probes each namespace in a short-lived child; no lasting effect.
std::string explain_namespace_failure(int flags, int err);

}  // namespace airlock::launcher
