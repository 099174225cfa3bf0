#include "launcher/options.hpp"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace airlock::launcher {
namespace {

parse_result parse(std::vector<std::string_view> args) {
  return parse_options(args);
}

TEST(LauncherOptions, DefaultsAndCommandAfterDoubleDash) {
  auto r = parse({"--", "sh", "-c", "exit 7"});
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->command, (std::vector<std::string>{"sh", "-c", "exit 7"}));
  EXPECT_EQ(r.value->proxy, "127.0.0.1:3128");
  EXPECT_EQ(r.value->relay_port, 3128);
  EXPECT_FALSE(r.value->proxy_protocol);
  EXPECT_FALSE(r.value->memory_bytes);
  EXPECT_FALSE(r.value->timeout);
}

TEST(LauncherOptions, CommandStartsAtFirstNonOption) {
  auto r = parse({"--agent", "coder", "curl", "--proxy", "x"});
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->agent, "coder");
  // "--proxy x" belongs to curl, not to us.
  EXPECT_EQ(r.value->proxy, "127.0.0.1:3128");
  EXPECT_EQ(r.value->command, (std::vector<std::string>{"curl", "--proxy", "x"}));
}

TEST(LauncherOptions, AllValuedOptionsBothSpellings) {
  auto r = parse({"--agent=a",
                  "--proxy",
                  "[::1]:8080",
                  "--workdir=/w",
                  "--ro",
                  "/a",
                  "--ro=/b",
                  "--rw",
                  "/c",
                  "--hide",
                  "/d",
                  "--memory",
                  "512M",
                  "--cpus=1.5",
                  "--pids",
                  "128",
                  "--timeout",
                  "60s",
                  "--env",
                  "A=1",
                  "--env=B",
                  "--ca",
                  "ca.crt",
                  "--ca-key",
                  "ca.key",
                  "--relay-port",
                  "8888",
                  "--verbose",
                  "--proxy-protocol",
                  "--cgroup",
                  "/sys/fs/cgroup/x",
                  "--policy=/etc/airlock/policy.yaml",
                  "--",
                  "true"});
  ASSERT_TRUE(r.value) << r.error;
  const auto& o = *r.value;
  EXPECT_EQ(o.agent, "a");
  EXPECT_EQ(o.proxy, "[::1]:8080");
  EXPECT_EQ(o.workdir, "/w");
  EXPECT_EQ(o.ro, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o.rw, (std::vector<std::string>{"/c"}));
  EXPECT_EQ(o.hide, (std::vector<std::string>{"/d"}));
  EXPECT_EQ(o.memory_bytes, 512ULL << 20);
  EXPECT_EQ(o.cpu_millis, 1500u);
  EXPECT_EQ(o.pids, 128u);
  EXPECT_EQ(o.timeout, std::chrono::seconds(60));
  EXPECT_EQ(o.env, (std::vector<std::string>{"A=1", "B"}));
  EXPECT_EQ(o.ca, "ca.crt");
  EXPECT_EQ(o.ca_key, "ca.key");
  EXPECT_EQ(o.relay_port, 8888);
  EXPECT_TRUE(o.verbose);
  EXPECT_TRUE(o.proxy_protocol);
  EXPECT_EQ(o.cgroup, "/sys/fs/cgroup/x");
  EXPECT_EQ(o.policy, "/etc/airlock/policy.yaml");
  EXPECT_FALSE(parse({"--policy", "", "x"}).value);
}

TEST(LauncherOptions, CpuFractions) {
  EXPECT_EQ(parse({"--cpus", "0.5", "x"}).value->cpu_millis, 500u);
  EXPECT_EQ(parse({"--cpus", ".25", "x"}).value->cpu_millis, 250u);
  EXPECT_EQ(parse({"--cpus", "2", "x"}).value->cpu_millis, 2000u);
  EXPECT_EQ(parse({"--cpus", "0.001", "x"}).value->cpu_millis, 1u);
  for (auto bad : {"0", "0.0", "-1", "1.2345", "abc", "1.", "", "2000", "1e3", "0.0001"}) {
    EXPECT_FALSE(parse({"--cpus", bad, "x"}).value) << bad;
  }
}

TEST(LauncherOptions, RejectsBadValues) {
  const std::vector<std::vector<std::string_view>> bad = {
      {},                         // no command
      {"--"},                     // no command
      {"--", ""},                 // empty command
      {"--bogus", "x"},           // unknown option
      {"--memory"},               // missing value
      {"--memory", "lots", "x"},  // not a size
      {"--memory", "1K", "x"},    // too small to run anything
      {"--pids", "0", "x"},       // nothing could start
      {"--pids", "-3", "x"},
      {"--timeout", "0", "x"},
      {"--timeout", "soon", "x"},
      {"--relay-port", "0", "x"},
      {"--relay-port", "65536", "x"},
      {"--env", "=v", "x"},  // empty name
      {"--agent", "has space", "x"},
      {"--agent", "", "x"},
      {"--proxy-protocol", "x"},  // needs --agent
      // The relay socket trusts only the PROXY v2 header.
      {"--proxy", "unix:/run/airlock/relay.sock", "--agent", "a", "x"},
      {"--proxy", "unix:/run/airlock/relay.sock", "--proxy-protocol", "x"},
      {"--ro", "", "x"},
      {"--tmpfs-size", "100K", "x"},  // below 1M
      {"--fsize", "0", "x"},
      {"--nofile", "3", "x"},  // nothing starts with so few
      {"--nofile", "many", "x"},
      {"--home", "", "x"},
      {"--self-test", "--", "true"},  // the probes are the command
  };
  for (const auto& args : bad) {
    auto r = parse(args);
    EXPECT_FALSE(r.value) << (args.empty() ? "(none)" : args[0]);
    EXPECT_FALSE(r.error.empty());
  }
}

TEST(LauncherOptions, LimitsHomeAndSelfTest) {
  auto r = parse(
      {"--tmpfs-size", "256M", "--fsize=10M", "--nofile", "128", "--home", "/srv/h", "--", "true"});
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->tmpfs_bytes, 256ULL << 20);
  EXPECT_EQ(r.value->fsize_bytes, 10ULL << 20);
  EXPECT_EQ(r.value->nofile, 128u);
  EXPECT_EQ(r.value->home, "/srv/h");
  EXPECT_FALSE(r.value->self_test);
  r = parse({"--self-test", "--ro", "/var/tmp"});
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_TRUE(r.value->self_test);
  EXPECT_TRUE(r.value->command.empty());
}

TEST(LauncherOptions, CaptureModes) {
  auto def = parse({"true"});
  ASSERT_TRUE(def.value);
  EXPECT_EQ(def.value->capture, capture_mode::automatic);
  auto on = parse({"--capture", "true"});
  ASSERT_TRUE(on.value);
  EXPECT_EQ(on.value->capture, capture_mode::on);
  auto off = parse({"--capture", "--no-capture", "true"});  // the last one wins
  ASSERT_TRUE(off.value);
  EXPECT_EQ(off.value->capture, capture_mode::off);
  EXPECT_FALSE(parse({"--capture=yes", "true"}).value);  // a flag, not a valued option
  EXPECT_NE(usage().find("--no-capture"), std::string_view::npos);
}

TEST(LauncherOptions, UnixRelaySocket) {
  auto r = parse({"--proxy", "unix:/run/airlock/relay.sock", "--proxy-protocol", "--agent", "coder",
                  "--", "true"});
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(r.value->proxy, "unix:/run/airlock/relay.sock");
  EXPECT_TRUE(r.value->proxy_protocol);
  EXPECT_EQ(r.value->agent, "coder");
}

TEST(LauncherOptions, HelpNeedsNoCommand) {
  auto r = parse({"--help"});
  ASSERT_TRUE(r.value);
  EXPECT_TRUE(r.value->help);
  EXPECT_NE(usage().find("--timeout"), std::string_view::npos);
  EXPECT_NE(usage().find("124"), std::string_view::npos);
}

}  // namespace
}  // namespace airlock::launcher
