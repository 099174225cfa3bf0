#pragma once
// Resource limits: memory, CPU and process count through cgroup v2 where it is mounted and
// writable, else cgroup v1, else rlimits — decided per resource, so a host with only the pids
// controller delegated still gets a hard process limit. Wall time is run.cpp's job.
//
// The launcher makes one cgroup per run, named airlock-<launcher pid>, under its own cgroup
// (or under --cgroup DIR), moves the jail's first process into it before that process does
// anything, and removes it when the jail is gone.

#include "launcher/plan.hpp"

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

enum class resource { memory = 0, cpu = 1, pids = 2 };
enum class mechanism { none, cgroup_v2, cgroup_v1, rlimit };

std::string_view to_string(mechanism m) noexcept;

// Where this process sits in each mounted hierarchy.
struct cgroup_layout {
  std::optional<std::string> v2_dir;           // own cgroup directory in the v2 hierarchy
  std::map<std::string, std::string> v1_dirs;  // controller ("memory", "cpu", "pids") -> dir
};

// Pure: from the text of /proc/self/cgroup and /proc/self/mountinfo.
cgroup_layout parse_cgroup_layout(std::string_view proc_self_cgroup, std::string_view mountinfo);
// The same, read from this process.
cgroup_layout read_cgroup_layout();

// Bits of the `go` message: which limits the jail applies to itself as rlimits.
inline constexpr std::uint32_t rlimit_memory = 1u << 0;
inline constexpr std::uint32_t rlimit_cpu = 1u << 1;
inline constexpr std::uint32_t rlimit_pids = 1u << 2;

class jail_limits {
 public:
  jail_limits() = default;
  jail_limits(const jail_limits&) = delete;
  jail_limits& operator=(const jail_limits&) = delete;
  ~jail_limits() { cleanup(); }

  // Host side, right after clone: creates the cgroups, writes the limits, moves child in.
  // Never fails: whatever cannot be done with a cgroup is left to rlimits (rlimit_mask()).
  void setup(const limit_spec& spec, pid_t child, const cgroup_layout& layout,
             const std::string& name);

  std::uint32_t rlimit_mask() const noexcept;
  mechanism applied(resource r) const noexcept { return applied_[static_cast<int>(r)]; }
  // "memory=cgroup-v1 cpu=none pids=rlimit", for --verbose.
  std::string summary() const;
  // True when the kernel's OOM killer acted inside the jail's memory cgroup.
  bool oom_killed() const;
  // Removes the cgroups (retrying briefly while exiting tasks drain). Idempotent.
  void cleanup() noexcept;

 private:
  std::vector<std::string> created_;  // cgroup directories made by setup
  std::array<mechanism, 3> applied_{mechanism::none, mechanism::none, mechanism::none};
  std::optional<std::string> oom_file_;  // memory.events (v2) or memory.oom_control (v1)
};

// In the jail, before the command runs: the rlimit fallbacks named by mask. RLIMIT_AS for
// memory, RLIMIT_NPROC for pids, RLIMIT_CPU (CPU seconds = cpus x timeout) for CPU.
bool apply_rlimits(const limit_spec& spec, std::uint32_t mask);

// The RLIMIT_CPU seconds for a CPU share and a wall-time limit, or nullopt without a timeout.
std::optional<std::uint64_t> cpu_seconds_for(const limit_spec& spec);

}  // namespace airlock::launcher
