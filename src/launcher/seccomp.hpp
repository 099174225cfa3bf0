#pragma once
// The system-call filter (seccomp(2), built with libseccomp). Default allow, with a deny list
// of calls a confined agent has no business making: the ones that change namespaces, mounts,
// the kernel, or look into other processes, and sockets other than TCP/UDP over IPv4/IPv6,
// Unix and rtnetlink. Denied calls fail with EPERM (EAFNOSUPPORT for socket families, ENOSYS
// for clone3 so that libc falls back to clone, whose flags can be inspected); the launcher
// cannot see them — see docs/launcher.md.
//
// Installed last, after no_new_privs and the capability drop: nothing after it needs to be
// privileged, and every later process inherits it.

#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

// The number the filter uses for the system call `name`, given libseccomp's answer `resolved`
// (seccomp_syscall_resolve_name): that answer when libseccomp knows the name (a negative
// pseudo-number for a call this architecture lacks), else the kernel's number for a call
// newer than some libseccomp releases (fchmodat2, openat2, ...), else __NR_SCMP_ERROR, on
// which the filter is not built (the jail does not run).
int filter_syscall_number(std::string_view name, int resolved);

// One line per rule ("ptrace: EPERM", "clone(CLONE_NEWUSER): EPERM", ...), for docs and tests.
std::vector<std::string> seccomp_rules();

// Builds the filter and loads it into the calling thread. Requires no_new_privs (or
// CAP_SYS_ADMIN). False with the failure recorded if any rule cannot be added.
bool install_seccomp_filter();

// Builds the filter and compiles it to the BPF program the kernel loads, in a memfd: the
// launcher compiles it while the jail sets up its network and mounts, and the jail then only
// loads it (install_seccomp_program), keeping libseccomp's compile off the critical path.
// -1 with the failure recorded.
int compile_seccomp_filter();

// Loads the program that compile_seccomp_filter wrote to fd into the calling thread, exactly
// as install_seccomp_filter would (with the kernel's logging of denials where it has it).
// Requires no_new_privs (or CAP_SYS_ADMIN). Does not close fd.
bool install_seccomp_program(int fd);

// Builds the filter and writes it in libseccomp's pseudo-filter-code text to fd (for tests
// and debugging). False on failure.
bool export_seccomp_filter(int fd);

}  // namespace airlock::launcher
