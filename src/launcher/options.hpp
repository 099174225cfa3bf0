#pragma once
// The command line of `airlock run`, parsed into plain values. Parsing does no syscalls and
// touches no file: paths are checked and canonicalised later, by build_plan (plan.hpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

// --capture / --no-capture; automatic (the default) captures where the kernel allows it and
// says so on stderr where it does not (docs/launcher.md, "Capture").
enum class capture_mode { automatic, on, off };

// A file of the proxy named by --policy (src/app/cmd_run.cpp) whose directory is hidden, so
// that a replacement renamed over the file stays hidden too (docs/launcher.md, "--policy").
struct hidden_dir_of {
  std::string path;
  std::string why;        // for messages: "secret filesec of --policy p.yaml"
  bool required = false;  // a secret: refuse to run rather than hide only the file
};

struct options {
  std::optional<std::string> agent;           // --agent NAME: identity the relay vouches for
  std::string proxy = "127.0.0.1:3128";       // --proxy HOST:PORT or unix:/PATH (launcher's side)
  bool proxy_protocol = false;                // --proxy-protocol: PROXY v2 header per connection
  std::uint16_t relay_port = 3128;            // --relay-port: listener inside the jail
  std::optional<std::string> workdir;         // --workdir DIR (default: current directory)
  std::vector<std::string> ro;                // --ro PATH: read-only bind (over a --rw parent)
  std::vector<std::string> rw;                // --rw PATH: writable bind
  std::vector<std::string> hide;              // --hide PATH: made empty / unreadable inside
  std::optional<std::uint64_t> memory_bytes;  // --memory 512M
  std::optional<std::uint32_t> cpu_millis;    // --cpus 1.5 -> 1500
  std::optional<std::uint32_t> pids;          // --pids 128
  std::optional<std::chrono::milliseconds> timeout;  // --timeout 60s
  std::optional<std::uint64_t> tmpfs_bytes;          // --tmpfs-size 1G: /tmp and the home layer
  std::optional<std::uint64_t> fsize_bytes;          // --fsize 100M: RLIMIT_FSIZE
  std::optional<std::uint64_t> nofile;               // --nofile 1024: RLIMIT_NOFILE
  // --home DIR: the jail's home is DIR, writable and kept; without it, a private throwaway
  // layer over the caller's home.
  std::optional<std::string> home;
  bool self_test = false;         // --self-test: probe the jail's ways out instead of running CMD
  std::vector<std::string> env;   // --env K=V (set) or --env K (pass the host's K)
  std::optional<std::string> ca;  // --ca FILE: the Airlock CA certificate (PEM)
  std::optional<std::string> ca_key;  // --ca-key FILE: its directory is hidden
  std::optional<std::string> cgroup;  // --cgroup DIR: delegated cgroup v2 parent
  // --policy FILE: the proxy's policy; its secrets' files are hidden and each secret read from
  // an environment variable that has a placeholder gets that variable set to the placeholder
  // (src/app/cmd_run.cpp applies it: the launcher itself does not parse policies).
  std::optional<std::string> policy;
  std::vector<hidden_dir_of> hide_dir_of;  // from --policy: secrets, the policy, the audit log
  std::vector<std::string> env_remove;     // from --policy: secret variables never handed over
  bool java_truststore = false;            // --java-truststore: keytool-made store for the JVM
  capture_mode capture = capture_mode::automatic;  // --capture / --no-capture
  std::vector<std::string> dns_allow;  // --dns-allow NAME: answered although data-like (lower case)
  bool verbose = false;                // --verbose: one line per decision on stderr
  bool help = false;                   // --help
  std::vector<std::string> command;    // CMD ARGS (after --)
};

struct parse_result {
  std::optional<options> value;  // set on success
  std::string error;             // one line, set on failure
};

// Accepts `--name value` and `--name=value`; CMD starts after `--` or at the first word that
// is not an option. A missing CMD is an error unless --help was given.
parse_result parse_options(std::span<const std::string_view> args);

// The --help text.
std::string_view usage() noexcept;

}  // namespace airlock::launcher
