#include "launcher/seccomp.hpp"

#include "launcher/capabilities.hpp"

#include <gtest/gtest.h>
#include <seccomp.h>

#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <string>

namespace airlock::launcher {
namespace {

// How the child gets its filter: built and loaded by libseccomp there, or compiled by the
// parent and handed over as a BPF program (what `airlock run` does).
enum class loading { libseccomp, precompiled };

// Runs body in a forked child after loading the filter; returns the child's wait status.
// The body returns 0 when every expectation held, else the number of the failed check.
int in_filtered_child(const std::function<int()>& body, loading how = loading::libseccomp) {
  int program = -1;
  if (how == loading::precompiled) {
    program = compile_seccomp_filter();
    if (program < 0) return -1;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!set_no_new_privs()) ::_exit(100);
    if (!(program >= 0 ? install_seccomp_program(program) : install_seccomp_filter())) ::_exit(101);
    ::_exit(body());
  }
  if (program >= 0) ::close(program);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// errno of a call that should fail, or 0 if it succeeded.
int err_of(long rc) {
  return rc < 0 ? errno : 0;
}

TEST(LauncherSeccomp, RuleListNamesTheDenials) {
  const auto rules = seccomp_rules();
  auto has = [&](std::string_view r) {
    return std::find(rules.begin(), rules.end(), r) != rules.end();
  };
  for (auto r : {"ptrace: EPERM",
                 "mount: EPERM",
                 "unshare: EPERM",
                 "setns: EPERM",
                 "bpf: EPERM",
                 "keyctl: EPERM",
                 "userfaultfd: EPERM",
                 "open_by_handle_at: EPERM",
                 "clone3: ENOSYS",
                 "clone(CLONE_NEWUSER): EPERM",
                 "clone(CLONE_NEWNET): EPERM",
                 "socket(AF_PACKET): EPERM",
                 "socket(AF_INET, SOCK_RAW): EPERM",
                 "socket(AF_INET6, SOCK_RAW): EPERM",
                 "socket(AF_NETLINK, !NETLINK_ROUTE): EPERM",
                 "io_uring_setup: EPERM",
                 "kexec_load: EPERM",
                 "init_module: EPERM",
                 "ioctl(TIOCSTI): EPERM",
                 "chmod(mode & S_ISUID): EPERM",
                 "fchmodat2(mode & S_ISGID): EPERM",
                 "openat(O_CREAT, mode & S_ISUID): EPERM",
                 "openat(O_TMPFILE, mode & S_ISGID): EPERM",
                 "mknodat(mode & S_ISUID): EPERM",
                 "openat2: ENOSYS",
                 "ioctl(TIOCLINUX): EPERM",
                 "personality(anything but PER_LINUX or 0xffffffff): EPERM"}) {
    EXPECT_TRUE(has(r)) << r;
  }
}

TEST(LauncherSeccomp, ExportsFilterText) {
  char name[] = "/tmp/airlock-seccomp-XXXXXX";
  const int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  ::unlink(name);
  ASSERT_TRUE(export_seccomp_filter(fd));
  std::string text(1 << 20, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  ::close(fd);
  ASSERT_GT(n, 0);
  text.resize(static_cast<std::size_t>(n));
  EXPECT_NE(text.find("ptrace"), std::string::npos);
  EXPECT_NE(text.find("clone3"), std::string::npos);
}

class LauncherSeccompLoading : public ::testing::TestWithParam<loading> {};

TEST_P(LauncherSeccompLoading, DeniesWhatItShouldAndAllowsTheRest) {
  const int status = in_filtered_child(
      [] {
        int check = 0;
        auto expect = [&](bool ok) {
          ++check;
          return ok;
        };
        // Denied with EPERM.
        if (!expect(err_of(::unshare(CLONE_NEWUSER)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_setns, -1, 0)) == EPERM)) return check;
        if (!expect(err_of(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_mount, "none", "/", "tmpfs", 0, nullptr)) == EPERM))
          return check;
        if (!expect(err_of(::syscall(SYS_userfaultfd, 0)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)) == EPERM))
          return check;
        if (!expect(err_of(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0)) == EPERM))
          return check;
        if (!expect(err_of(::socket(AF_PACKET, SOCK_RAW, 0)) == EPERM)) return check;
        if (!expect(err_of(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1)) == EPERM)) return check;
        if (!expect(err_of(::socket(AF_INET6, SOCK_RAW, 58)) == EPERM)) return check;
        if (!expect(err_of(::socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT)) == EPERM)) return check;
        // Other families: as if the kernel lacked them (AF_VSOCK is 40, AF_BLUETOOTH 31).
        if (!expect(err_of(::socket(40, SOCK_STREAM, 0)) == EAFNOSUPPORT)) return check;
        if (!expect(err_of(::socket(31, SOCK_STREAM, 0)) == EAFNOSUPPORT)) return check;
        if (!expect(err_of(::syscall(SYS_socket, 0x100000000L | AF_INET, SOCK_STREAM, 0)) ==
                    EAFNOSUPPORT))
          return check;
        // Terminal injection, also with junk in the high half of the request (CVE-2019-10063):
        // refused before the kernel looks at the descriptor (-1 here), which would say EBADF.
        char c = 'x';
        if (!expect(err_of(::syscall(SYS_ioctl, -1, TIOCSTI, &c)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_ioctl, -1, TIOCSTI | (1UL << 32), &c)) == EPERM))
          return check;
        if (!expect(err_of(::syscall(SYS_ioctl, -1, TIOCLINUX, &c)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_ioctl, -1, TCGETS, &c)) == EBADF)) return check;
        // personality: only the default and the query.
        if (!expect(err_of(::personality(READ_IMPLIES_EXEC)) == EPERM)) return check;
        if (!expect(err_of(::personality(ADDR_NO_RANDOMIZE)) == EPERM)) return check;
        if (!expect(err_of(::personality(PER_LINUX32)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_personality, 0x80000000UL)) == EPERM)) return check;
        if (!expect(err_of(::syscall(SYS_personality, 0xFFFFFFFEUL)) == EPERM)) return check;
        if (!expect(::personality(0xffffffff) >= 0)) return check;
        if (!expect(::personality(PER_LINUX) >= 0)) return check;
        // clone3 gets ENOSYS so that libc falls back to clone.
        if (!expect(err_of(::syscall(SYS_clone3, nullptr, 0)) == ENOSYS)) return check;

        // Allowed: ordinary sockets, rtnetlink, fork (clone without namespace flags).
        for (int fam : {AF_INET, AF_INET6, AF_UNIX}) {
          const int s = ::socket(fam, SOCK_STREAM, 0);
          if (!expect(s >= 0)) return check;
          ::close(s);
        }
        const int u = ::socket(AF_INET, SOCK_DGRAM, 0);
        if (!expect(u >= 0)) return check;
        ::close(u);
        const int nl = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (!expect(nl >= 0)) return check;
        ::close(nl);
        const pid_t child = ::fork();
        if (child == 0) ::_exit(0);
        int st = 0;
        if (!expect(child > 0 && ::waitpid(child, &st, 0) == child && WIFEXITED(st))) return check;
        return 0;
      },
      GetParam());
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check number " << WEXITSTATUS(status) << " failed";
}

// A libseccomp older than the kernel (Ubuntu 22.04's 2.5.3 knows no fchmodat2) must not
// leave a call open: the filter uses the kernel's number, and a call it cannot number at all
// stops the filter from being built.
TEST(LauncherSeccomp, CallsUnknownToLibseccompKeepTheirRules) {
  EXPECT_EQ(filter_syscall_number("fchmodat2", __NR_SCMP_ERROR), 452);
  EXPECT_EQ(filter_syscall_number("openat2", __NR_SCMP_ERROR), 437);
  EXPECT_EQ(filter_syscall_number("clone3", __NR_SCMP_ERROR), 435);
  EXPECT_EQ(filter_syscall_number("mount_setattr", __NR_SCMP_ERROR), 442);
  EXPECT_EQ(filter_syscall_number("no_such_call", __NR_SCMP_ERROR), __NR_SCMP_ERROR);
  // What libseccomp knows is taken as it is, pseudo-numbers of absent calls included.
  EXPECT_EQ(filter_syscall_number("fchmodat2", 452), 452);
  EXPECT_EQ(filter_syscall_number("open", __PNR_open), __PNR_open);
  // The table agrees with this libseccomp wherever it knows the call.
  for (const char* name :
       {"fchmodat2", "openat2", "clone3", "io_uring_setup", "open_tree", "move_mount", "fsopen",
        "fsconfig", "fsmount", "fspick", "mount_setattr", "quotactl_fd"}) {
    const int known = seccomp_syscall_resolve_name(name);
    if (known >= 0) {
      EXPECT_EQ(filter_syscall_number(name, __NR_SCMP_ERROR), known) << name;
    }
  }
}

// No set-user-ID or set-group-ID bit on a file the jail writes (the red team planted a
// setuid-root cat in the work directory); ordinary modes still work.
TEST_P(LauncherSeccompLoading, RefusesSetidModes) {
  char dir[] = "/tmp/airlock-seccomp-setid-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/f";
  const std::string other = std::string(dir) + "/g";
  const int status = in_filtered_child(
      [&] {
        int check = 0;
        auto expect = [&](bool ok) {
          ++check;
          return ok;
        };
        const char* f = file.c_str();
        const int fd = ::open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (!expect(fd >= 0)) return check;
        for (long mode : {04755L, 02755L, 06755L, 04000L | (1L << 32)}) {
          const char* g = other.c_str();
#if defined(__x86_64__)  // aarch64 has neither chmod, open, creat nor mknod, only the *at calls
          if (!expect(err_of(::syscall(SYS_chmod, f, mode)) == EPERM)) return check;
          if (!expect(err_of(::syscall(SYS_open, g, O_WRONLY | O_CREAT, mode)) == EPERM))
            return check;
          if (!expect(err_of(::syscall(SYS_creat, g, mode)) == EPERM)) return check;
          if (!expect(err_of(::syscall(SYS_mknod, g, S_IFREG | mode, 0)) == EPERM)) return check;
#endif
          if (!expect(err_of(::syscall(SYS_fchmod, fd, mode)) == EPERM)) return check;
          if (!expect(err_of(::syscall(SYS_fchmodat, AT_FDCWD, f, mode)) == EPERM)) return check;
          if (!expect(err_of(::syscall(452 /* fchmodat2 */, AT_FDCWD, f, mode, 0)) == EPERM))
            return check;
          if (!expect(err_of(::syscall(SYS_openat, AT_FDCWD, g, O_WRONLY | O_CREAT, mode)) ==
                      EPERM))
            return check;
          if (!expect(err_of(::syscall(SYS_openat, AT_FDCWD, "/tmp", O_WRONLY | O_TMPFILE, mode)) ==
                      EPERM))
            return check;
          if (!expect(err_of(::syscall(SYS_mknodat, AT_FDCWD, g, S_IFREG | mode, 0)) == EPERM))
            return check;
          if (!expect(::access(g, F_OK) != 0)) return check;
        }
        // openat2's struct is out of the filter's reach: ENOSYS, so that callers fall back.
        if (!expect(err_of(::syscall(SYS_openat2, AT_FDCWD, f, nullptr, 0)) == ENOSYS))
          return check;
        // Allowed: ordinary modes, and opening without O_CREAT whatever the mode argument.
        if (!expect(::chmod(f, 0755) == 0 && ::fchmod(fd, 01777) == 0)) return check;
        const int again = ::open(f, O_RDONLY | O_CLOEXEC, 04755);
        if (!expect(again >= 0)) return check;
        ::close(again);
        const int created = ::open(other.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0700);
        if (!expect(created >= 0)) return check;
        ::close(created);
        ::close(fd);
        struct stat st;
        if (!expect(::stat(f, &st) == 0 && (st.st_mode & 07777) == 01777)) return check;
        return 0;
      },
      GetParam());
  ::unlink(file.c_str());
  ::unlink(other.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check number " << WEXITSTATUS(status) << " failed";
}

#if defined(__x86_64__)
TEST_P(LauncherSeccompLoading, KillsOtherAbis) {
  // getpid through the x32 ABI (bit 30 set): a filter written for x86_64 numbers must not
  // let it through, whatever the kernel's x32 support.
  const int status = in_filtered_child(
      [] {
        ::syscall(0x40000000L | SYS_getpid);
        return 0;
      },
      GetParam());
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}
#endif

INSTANTIATE_TEST_SUITE_P(Both, LauncherSeccompLoading,
                         ::testing::Values(loading::libseccomp, loading::precompiled),
                         [](const auto& info) {
                           return info.param == loading::libseccomp ? "libseccomp" : "precompiled";
                         });

TEST(LauncherSeccomp, PrecompiledProgramIsTheFilter) {
  const int fd = compile_seccomp_filter();
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  // Whole BPF instructions, and enough of them for every rule.
  EXPECT_EQ(st.st_size % 8, 0);
  EXPECT_GT(st.st_size / 8, 50);
  // The descriptor does not leak into programs the launcher starts.
  EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC);
  ::close(fd);
}

TEST(LauncherSeccomp, RefusesWhatIsNotAProgram) {
  // Checked before anything is loaded: this process stays unfiltered.
  for (std::size_t size :
       {std::size_t{0}, std::size_t{7}, std::size_t{13}, std::size_t{8 * 5000}}) {
    const int fd = ::memfd_create("not-a-program", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    EXPECT_FALSE(install_seccomp_program(fd)) << size << " bytes";
    ::close(fd);
  }
}

}  // namespace
}  // namespace airlock::launcher
