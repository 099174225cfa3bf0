#include "launcher/seccomp.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace airlock::launcher {
namespace {

using core::str_cat;

// Whole system calls denied with EPERM. Most also need a capability the jail no longer has;
// denying them here as well is defence in depth against kernel bugs (the Docker and nsjail
// default policies deny the same set for the same reason).
constexpr const char* denied_eperm[] = {
    // looking into or steering other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    // changing the file-system view or the namespaces
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    // kernel-wide objects and state
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "iopl",
    "ioperm",
    // file handles bypass path-based confinement (the "shocker" escape)
    "open_by_handle_at",
    "name_to_handle_at",
    // userfaultfd makes kernel races easy to win; io_uring can create sockets without
    // passing through the socket() rule below (IORING_OP_SOCKET, Linux 5.19)
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
};

// clone(2) flags that would create namespaces (clone's first argument on x86_64/aarch64;
// CLONE_NEWTIME is not listed: in clone() those bits are the exit signal).
struct named_flag {
  unsigned long flag;
  const char* name;
};
constexpr named_flag clone_ns_flags[] = {
    {CLONE_NEWNS, "CLONE_NEWNS"},     {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"},
    {CLONE_NEWUTS, "CLONE_NEWUTS"},   {CLONE_NEWIPC, "CLONE_NEWIPC"},
    {CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWPID, "CLONE_NEWPID"},
    {CLONE_NEWNET, "CLONE_NEWNET"},
};

// System calls newer than libseccomp releases still in use: 2.5.3 (Ubuntu 22.04) knows no
// fchmodat2, and a rule for a name it does not know used to be skipped, leaving raw syscall
// 452 free to set S_ISUID on Linux >= 6.6. Calls from 424 on have one number on every
// architecture but alpha and mips (Linux's unified table), so their kernel numbers are
// written here rather than taken from headers that may be older than the running kernel.
struct late_syscall {
  std::string_view name;
  int nr;
};
#if defined(__x86_64__) || defined(__aarch64__) || defined(__i386__) || defined(__arm__) || \
    defined(__riscv) || defined(__powerpc__) || defined(__s390__)
constexpr late_syscall late_syscalls[] = {
    {"io_uring_setup", 425}, {"io_uring_enter", 426}, {"io_uring_register", 427},
    {"open_tree", 428},      {"move_mount", 429},     {"fsopen", 430},
    {"fsconfig", 431},       {"fsmount", 432},        {"fspick", 433},
    {"clone3", 435},         {"openat2", 437},        {"mount_setattr", 442},
    {"quotactl_fd", 443},    {"fchmodat2", 452},
};
#else
// Elsewhere the numbers differ: a libseccomp that does not know one refuses the filter.
constexpr late_syscall late_syscalls[] = {{"", -1}};
#endif

struct ctx_deleter {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using ctx_ptr = std::unique_ptr<void, ctx_deleter>;

// Every rule guards a privilege: one that cannot be added fails the whole filter (and the
// jail does not run) rather than leaving the call open.
bool add(scmp_filter_ctx ctx, std::uint32_t action, const char* name,
         std::initializer_list<scmp_arg_cmp> args, std::vector<std::string>* rules,
         std::string_view description) {
  const int nr = filter_syscall_number(name, seccomp_syscall_resolve_name(name));
  if (nr == __NR_SCMP_ERROR)
    return step_failed_msg(str_cat("seccomp: libseccomp ", seccomp_version()->major, '.',
                                   seccomp_version()->minor, '.', seccomp_version()->micro,
                                   " does not know the system call ", name,
                                   ", which the filter must deny"));
  // A negative pseudo-number: a call this architecture does not have (open on aarch64);
  // libseccomp accepts the rule and leaves it out.
  if (rules) rules->emplace_back(description);
  if (!ctx) return true;
  const int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()),
                                        args.size() ? args.begin() : nullptr);
  if (rc != 0) {
    errno = -rc;
    return step_failed(str_cat("seccomp_rule_add(", description, ')'));
  }
  return true;
}

// Calls that set a file's mode, and the argument that carries it.
struct mode_call {
  const char* name;
  unsigned mode_arg;
  int flags_arg = -1;  // the open flags: the mode counts only when they create a file
};
constexpr mode_call mode_calls[] = {
    {"chmod", 1}, {"fchmod", 1},  {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1},
    {"mknod", 1}, {"mknodat", 2}, {"open", 2, 1},  {"openat", 3, 2},
};

// A set-user-ID or set-group-ID bit on a file the jail writes is a privilege for whoever runs
// it on the host: the jail's root is the host's root when the launcher runs as root, and
// chmod(2) needs no capability on one's own files. chmod(2), open(2) with O_CREAT or
// O_TMPFILE, creat(2) and mknod(2) are refused (EPERM) when the mode has either bit; the kernel
// reads the mode as a umode_t, so masking the bits ignores whatever the upper half holds.
// mkdir(2) is not listed: the kernel drops both bits from its mode (vfs_mkdir). openat2(2)
// passes mode and flags in a struct the filter cannot read: ENOSYS, on which libc and
// programs fall back to openat(2) (glibc's open() never calls openat2).
bool add_setid_rules(scmp_filter_ctx ctx, std::vector<std::string>* rules) {
  const std::uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const auto& c : mode_calls) {
    for (const auto& [bit, bit_name] :
         {std::pair<scmp_datum_t, const char*>{S_ISUID, "S_ISUID"}, {S_ISGID, "S_ISGID"}}) {
      const scmp_arg_cmp mode{c.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit};
      if (c.flags_arg < 0) {
        if (!add(ctx, eperm, c.name, {mode}, rules,
                 str_cat(c.name, "(mode & ", bit_name, "): EPERM")))
          return false;
        continue;
      }
      const auto arg = static_cast<unsigned>(c.flags_arg);
      // O_TMPFILE is __O_TMPFILE | O_DIRECTORY; its own bit is what marks it.
      for (const auto& [flag, flag_name] :
           {std::pair<scmp_datum_t, const char*>{O_CREAT, "O_CREAT"},
            {O_TMPFILE & ~O_DIRECTORY, "O_TMPFILE"}}) {
        const scmp_arg_cmp creating{arg, SCMP_CMP_MASKED_EQ, flag, flag};
        if (!add(ctx, eperm, c.name, {creating, mode}, rules,
                 str_cat(c.name, '(', flag_name, ", mode & ", bit_name, "): EPERM")))
          return false;
      }
    }
  }
  return add(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", {}, rules, "openat2: ENOSYS");
}

// Adds every rule to ctx (when not null) and describes each in rules (when not null).
bool add_rules(scmp_filter_ctx ctx, std::vector<std::string>* rules) {
  const std::uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  const std::uint32_t noafs = SCMP_ACT_ERRNO(EAFNOSUPPORT);
  for (const char* name : denied_eperm) {
    if (!add(ctx, eperm, name, {}, rules, str_cat(name, ": EPERM"))) return false;
  }
  for (const auto& f : clone_ns_flags) {
    if (!add(ctx, eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, f.flag, f.flag)}, rules,
             str_cat("clone(", f.name, "): EPERM")))
      return false;
  }
  // clone3 passes its flags in memory, where a filter cannot look. ENOSYS makes glibc (>= 2.34)
  // and others fall back to clone(2), whose flags the rules above check.
  if (!add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", {}, rules, "clone3: ENOSYS")) return false;
  if (!add_setid_rules(ctx, rules)) return false;

  // Terminal injection (CVE-2017-5226): TIOCSTI pushes bytes into a terminal's input queue,
  // which the caller's shell reads after the jail is gone; TIOCLINUX (selection paste) does
  // the same on a virtual console. ioctl's request is an int in the kernel, but the filter
  // sees 64 bits: compare the low 32 only, or a request with junk in the high half gets
  // through (CVE-2019-10063, bubblewrap/flatpak).
  for (const auto& [request, name] :
       {std::pair<unsigned long, const char*>{TIOCSTI, "TIOCSTI"}, {TIOCLINUX, "TIOCLINUX"}}) {
    if (!add(ctx, eperm, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFUL, request)}, rules,
             str_cat("ioctl(", name, "): EPERM")))
      return false;
  }
  // personality(2): only the default execution domain (PER_LINUX) and the query 0xffffffff.
  // READ_IMPLIES_EXEC makes every readable mapping executable, ADDR_NO_RANDOMIZE turns off
  // ASLR, and the other flags only emulate other systems. The kernel takes an unsigned int:
  // only the low 32 bits count. A filter rule compares one argument once, so "neither all
  // zeros nor all ones" is said as "some bit is 0 where the next (cyclically) is 1": any
  // 32-bit value but those two has such a pair.
  for (unsigned bit = 0; bit < 32; ++bit) {
    const scmp_datum_t next = 1UL << ((bit + 1) % 32);
    if (!add(ctx, eperm, "personality", {SCMP_A0(SCMP_CMP_MASKED_EQ, (1UL << bit) | next, next)},
             nullptr, ""))
      return false;
  }
  if (rules) rules->emplace_back("personality(anything but PER_LINUX or 0xffffffff): EPERM");

  // socket(2): packet sockets and raw IP sockets see and forge traffic — EPERM, as the
  // kernel itself would answer without CAP_NET_RAW.
  if (!add(ctx, eperm, "socket", {SCMP_A0(SCMP_CMP_EQ, AF_PACKET)}, rules,
           "socket(AF_PACKET): EPERM"))
    return false;
  for (int family : {AF_INET, AF_INET6}) {
    for (int type : {SOCK_RAW, SOCK_PACKET}) {
      // The type argument also carries SOCK_NONBLOCK/SOCK_CLOEXEC; the low 4 bits are the
      // type (SOCK_TYPE_MASK in the kernel).
      if (!add(ctx, eperm, "socket",
               {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family)),
                SCMP_A1(SCMP_CMP_MASKED_EQ, 0xF, static_cast<scmp_datum_t>(type))},
               rules,
               str_cat("socket(", family == AF_INET ? "AF_INET" : "AF_INET6", ", ",
                       type == SOCK_RAW ? "SOCK_RAW" : "SOCK_PACKET", "): EPERM")))
        return false;
    }
  }
  // Netlink: only NETLINK_ROUTE, which glibc's getaddrinfo(AI_ADDRCONFIG) and `ip` need and
  // which sees only the jail's own loopback. Audit, uevent, netfilter, sock_diag, ... are
  // denied.
  if (!add(ctx, eperm, "socket",
           {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE)}, rules,
           "socket(AF_NETLINK, !NETLINK_ROUTE): EPERM"))
    return false;
  // Every other family is answered as if the kernel lacked it (programs probe and fall back
  // on EAFNOSUPPORT). This closes AF_VSOCK — a way to the hypervisor that no network
  // namespace confines — and Bluetooth, CAN, TIPC, RDS, XDP, ALG and the rest.
  for (int family = 0; family < AF_PACKET; ++family) {
    if (family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK)
      continue;
    if (!add(ctx, noafs, "socket", {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family))},
             nullptr, ""))
      return false;
  }
  // From AF_PACKET + 1 up, including values with garbage in the upper 32 bits.
  if (!add(ctx, noafs, "socket", {SCMP_A0(SCMP_CMP_GE, AF_PACKET + 1)}, nullptr, "")) return false;
  if (rules)
    rules->emplace_back(
        "socket(any family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK): EAFNOSUPPORT");
  // socketpair only makes connected pairs, but the same families apply.
  if (!add(ctx, noafs, "socketpair", {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}, rules,
           "socketpair(any family but AF_UNIX): EAFNOSUPPORT"))
    return false;
  return true;
}

ctx_ptr build() {
  ctx_ptr ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) {
    step_failed_msg("seccomp_init failed");
    return nullptr;
  }
  // A system call made through another ABI (int 0x80 on x86_64, or x32 numbers) would not
  // match the rules above, which are written for the native numbers: kill the process.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) {
    errno = -rc;
    step_failed("seccomp_attr_set(ACT_BADARCH)");
    return nullptr;
  }
  // Ask the kernel to log denials where its audit configuration allows (best effort: the
  // launcher itself never sees them).
  (void)seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_LOG, 1);
  if (!add_rules(ctx.get(), nullptr)) return nullptr;
  return ctx;
}

}  // namespace

int filter_syscall_number(std::string_view name, int resolved) {
  if (resolved != __NR_SCMP_ERROR) return resolved;
  for (const auto& l : late_syscalls) {
    if (l.name == name && l.nr >= 0) return l.nr;
  }
  return __NR_SCMP_ERROR;
}

std::vector<std::string> seccomp_rules() {
  std::vector<std::string> rules;
  add_rules(nullptr, &rules);
  rules.emplace_back("any non-native ABI (x32, i386 int 0x80): kill process");
  return rules;
}

bool install_seccomp_filter() {
  ctx_ptr ctx = build();
  if (!ctx) return false;
  const int rc = seccomp_load(ctx.get());
  if (rc != 0) {
    errno = -rc;
    return step_failed("seccomp_load");
  }
  return true;
}

int compile_seccomp_filter() {
  ctx_ptr ctx = build();
  if (!ctx) return -1;
  const int fd = ::memfd_create("airlock-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    step_failed("memfd_create(seccomp)");
    return -1;
  }
  const int rc = seccomp_export_bpf(ctx.get(), fd);
  if (rc != 0) {
    ::close(fd);
    errno = -rc;
    step_failed("seccomp_export_bpf");
    return -1;
  }
  return fd;
}

bool install_seccomp_program(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return step_failed("fstat(seccomp program)");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0 || size % sizeof(sock_filter) != 0 || size / sizeof(sock_filter) > BPF_MAXINSNS)
    return step_failed_msg(str_cat("seccomp program of ", size, " bytes: not a BPF program"));
  std::vector<sock_filter> code(size / sizeof(sock_filter));
  if (::pread(fd, code.data(), size, 0) != static_cast<ssize_t>(size))
    return step_failed("pread(seccomp program)");
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  // As seccomp_load does with SCMP_FLTATR_CTL_LOG: log denials where the kernel can
  // (Linux 4.14); an older kernel refuses the flag with EINVAL, and gets the filter without.
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, &prog) == 0)
    return true;
  if (errno == EINVAL && ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
    return true;
  return step_failed("seccomp(SECCOMP_SET_MODE_FILTER)");
}

bool export_seccomp_filter(int fd) {
  ctx_ptr ctx = build();
  if (!ctx) return false;
  const int rc = seccomp_export_pfc(ctx.get(), fd);
  if (rc != 0) {
    errno = -rc;
    return step_failed("seccomp_export_pfc");
  }
  return true;
}

}  // namespace airlock::launcher
