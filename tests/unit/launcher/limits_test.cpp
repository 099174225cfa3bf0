#include "launcher/limits.hpp"

#include <gtest/gtest.h>

namespace airlock::launcher {
namespace {

constexpr std::string_view hybrid_cgroup =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "4:memory:/process_api/abc\n"
    "2:cpu,cpuacct:/user.slice\n"
    "0::/\n";
constexpr std::string_view hybrid_mountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "30 29 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "31 29 0:27 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "32 29 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "33 29 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(LauncherLimits, ParsesHybridLayout) {
  auto l = parse_cgroup_layout(hybrid_cgroup, hybrid_mountinfo);
  EXPECT_EQ(l.v2_dir, "/sys/fs/cgroup/unified");
  EXPECT_EQ(l.v1_dirs["memory"], "/sys/fs/cgroup/memory/process_api/abc");
  EXPECT_EQ(l.v1_dirs["pids"], "/sys/fs/cgroup/pids");
  EXPECT_EQ(l.v1_dirs["cpu"], "/sys/fs/cgroup/cpu,cpuacct/user.slice");
  EXPECT_EQ(l.v1_dirs.count("name=systemd"), 0u);
}

TEST(LauncherLimits, ParsesPureV2WithMountRoot) {
  // Inside a container, the cgroup2 mount's root is the container's cgroup.
  auto l = parse_cgroup_layout("0::/user.slice/user-1000.slice/session-2.scope\n",
                               "40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(l.v2_dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
  EXPECT_TRUE(l.v1_dirs.empty());

  l = parse_cgroup_layout("0::/a/b\n", "40 1 0:30 /a /mnt/cg rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(l.v2_dir, "/mnt/cg/b");
  // Our cgroup is not below the mount's root: not reachable through it.
  l = parse_cgroup_layout("0::/x\n", "40 1 0:30 /a /mnt/cg rw - cgroup2 cgroup2 rw\n");
  EXPECT_FALSE(l.v2_dir);
  l = parse_cgroup_layout("", "");
  EXPECT_FALSE(l.v2_dir);
}

TEST(LauncherLimits, FallsBackToRlimitsWithoutCgroups) {
  limit_spec spec;
  spec.memory_bytes = 64 << 20;
  spec.pids = 11;
  spec.cpu_millis = 500;  // no timeout: no rlimit equivalent
  jail_limits l;
  l.setup(spec, 1, cgroup_layout{}, "airlock-test");
  EXPECT_EQ(l.applied(resource::memory), mechanism::rlimit);
  EXPECT_EQ(l.applied(resource::pids), mechanism::rlimit);
  EXPECT_EQ(l.applied(resource::cpu), mechanism::none);
  EXPECT_EQ(l.rlimit_mask(), rlimit_memory | rlimit_pids);
  EXPECT_EQ(l.summary(), "memory=rlimit cpu=none pids=rlimit");
  EXPECT_FALSE(l.oom_killed());

  spec.timeout = std::chrono::seconds(10);
  jail_limits with_timeout;
  with_timeout.setup(spec, 1, cgroup_layout{}, "airlock-test");
  EXPECT_EQ(with_timeout.applied(resource::cpu), mechanism::rlimit);
}

TEST(LauncherLimits, UnwritableCgroupFallsBack) {
  cgroup_layout layout;
  layout.v1_dirs["pids"] = "/nonexistent/cgroup";
  layout.v2_dir = "/nonexistent/v2";
  limit_spec spec;
  spec.pids = 5;
  jail_limits l;
  l.setup(spec, 1, layout, "airlock-test");
  EXPECT_EQ(l.applied(resource::pids), mechanism::rlimit);
  EXPECT_EQ(l.applied(resource::memory), mechanism::none);  // not requested
}

TEST(LauncherLimits, CpuSecondsForTimeout) {
  limit_spec spec;
  EXPECT_FALSE(cpu_seconds_for(spec));
  spec.cpu_millis = 1500;
  EXPECT_FALSE(cpu_seconds_for(spec));
  spec.timeout = std::chrono::seconds(10);
  EXPECT_EQ(cpu_seconds_for(spec), 15u);
  spec.cpu_millis = 1;
  spec.timeout = std::chrono::milliseconds(10);
  EXPECT_EQ(cpu_seconds_for(spec), 1u);  // at least one second
}

}  // namespace
}  // namespace airlock::launcher
