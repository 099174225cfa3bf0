#pragma once
// `airlock run --self-test`: a containment check to run before trusting a host. The launcher
// builds the jail exactly as the other options say, and instead of CMD runs probes inside it
// that try every way out: TCP and UDP over IPv4 and IPv6 to canaries the launcher listens on
// (host loopback), raw and packet sockets, DNS to the host's resolver, abstract and path Unix
// sockets (canaries in the host's /tmp and /var/tmp), the host's secret files, writes outside
// the work directory, TIOCSTI/TIOCLINUX, ptrace, io_uring, new namespaces, mount,
// personality, and the limits. The launcher then checks its canaries, prints one row per probe
// (what was refused, by which layer) and exits 1 when anything got out, 0 when nothing did.

#include "launcher/plan.hpp"

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::launcher {

// The host's side, made before the jail is: its descriptors are inherited by the jail's
// processes (close-on-exec, and the probes never exec).
struct self_test_setup {
  self_test_setup() = default;
  self_test_setup(const self_test_setup&) = delete;
  self_test_setup& operator=(const self_test_setup&) = delete;
  ~self_test_setup() { close_all(); }
  // Closes what is still open and removes the canary directories; idempotent (also on every
  // early way out of run()).
  void close_all() noexcept;

  int report_read = -1, report_write = -1;  // the probes' rows, one per line
  int tcp4 = -1, tcp6 = -1, udp4 = -1, udp6 = -1, abstract_unix = -1;
  std::vector<int> path_unix;  // listeners at path_sockets
  std::uint16_t tcp4_port = 0, tcp6_port = 0, udp4_port = 0, udp6_port = 0;
  std::string abstract_name;  // without the leading NUL
  std::vector<std::string> path_sockets;
  std::vector<std::string> canary_dirs;  // where the probes try to write, removed at the end
  std::vector<std::string> nameservers;  // the host's, from /etc/resolv.conf
  pid_t host_pid = 0;                    // the launcher, as the host sees it
};

// Host side, before the jail is made. False with the failure recorded.
bool prepare_self_test(const plan& p, self_test_setup& s);

// In the jail, in place of CMD (after every confinement step): runs the probes, writes the
// rows to s.report_write and exits.
[[noreturn]] void run_probes(const plan& p, const self_test_setup& s);

// Host side, after the jail ended with jail_code: checks the canaries, prints the table and
// returns the exit status (0: nothing got out; 1: something did; 125: the probes did not run).
int finish_self_test(const plan& p, self_test_setup& s, int jail_code);

}  // namespace airlock::launcher
