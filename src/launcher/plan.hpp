#pragma once
// The plan: everything `airlock run` will do, computed from the options and a few host facts
// before any process is created (bubblewrap's SetupOp list). build_plan makes no syscalls —
// the host is reached only through the callbacks in host_facts — so the whole sandbox layout
// can be unit-tested. run.cpp executes a plan; it decides nothing the plan does not say.

#include "launcher/env.hpp"
#include "launcher/options.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace airlock::launcher {

// What build_plan may ask of the host. real_host_facts() (host.hpp) fills these from the
// running process; tests fill them by hand.
struct host_facts {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string cwd;                   // absolute
  std::string home;                  // for the built-in list of secret files; may be empty
  std::string passwd_home;           // the caller's home in the password database; may be empty
  std::vector<std::string> environ;  // "K=V"
  // realpath(3): the absolute, symlink-free path of an existing file, else nullopt.
  std::function<std::optional<std::string>(const std::string&)> canonical;
  // True for an existing directory (after following symlinks).
  std::function<bool(const std::string&)> is_dir;
  // Path of keytool if one is on PATH (for --java-truststore), else empty.
  std::string keytool;
};

enum class mount_kind {
  private_propagation,  // mount("/", MS_REC|MS_PRIVATE): nothing we do reaches the host
  root_ro,              // recursive bind of / onto the staging root, then recursively read-only
  tmpfs,                // fresh tmpfs at target (data = mount options)
  dev,                  // minimal /dev: tmpfs, null zero full random urandom tty, pts, shm
  proc,                 // the new PID namespace's own /proc
  sysfs,                // a /sys for the new network namespace (falls back to the read-only bind)
  trust,                // the launcher's private trust directory, read-only, at target
  resolv_conf,          // the launcher's resolv.conf (the jail's resolver), read-only, at target
  bind,                 // bind source (host path) at target, read-only unless writable
  hide,                 // empty read-only tmpfs (directory) or /dev/null (file) over target
  protect_ro,           // re-bind target onto itself read-only (e.g. /proc/sys); if it exists
  remount_ro,           // make the mount at target read-only (after populating it)
  trust_file,           // the staged trust file `source` bound read-only over target (if made)
  home_layer,           // overlay: a private tmpfs (data = its options) over the home at target
  pivot_root,           // make the staging root the root; detach the old one
};

struct mount_step {
  mount_kind kind = mount_kind::bind;
  std::string source;  // host path for bind; empty otherwise
  std::string target;  // absolute path as seen inside the jail
  bool writable = false;
  bool is_dir = true;     // bind/hide: the mount point is a directory (else a file)
  bool optional = false;  // a missing target is skipped rather than failing the run
  // hide: the path did not exist when the plan was made (a credential store not created yet).
  // Its mount point is made in the home's private layer, the first directory made is pinned
  // by a bind onto itself (so it cannot be renamed away), and the cover goes on as usual.
  bool make_point = false;
  std::string data;  // tmpfs options
};

struct limit_spec {
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint32_t> cpu_millis;
  // Processes, counting the jail's init (the user's --pids N becomes N + 1 here).
  std::optional<std::uint32_t> pids;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::string> cgroup_parent;  // --cgroup
  std::optional<std::uint64_t> fsize_bytes;  // --fsize: RLIMIT_FSIZE, always an rlimit
  std::optional<std::uint64_t> nofile;       // --nofile: RLIMIT_NOFILE
};

struct relay_spec {
  std::string proxy;          // HOST:PORT outside
  std::uint16_t port = 3128;  // 127.0.0.1:port inside
  std::optional<std::string> agent;
  bool proxy_protocol = false;
};

// Transparent capture (capture_net.hpp, resolver.hpp): a resolver on 127.0.0.1:53 inside, and
// every TCP connection to any other address handed to the proxy.
struct capture_spec {
  bool enabled = false;
  bool required = false;  // --capture: a jail that cannot have it does not run
  // Where the jail's resolv.conf goes: /etc/resolv.conf, or where that symlink leads on the
  // host (such as /run/systemd/resolve/stub-resolv.conf, then made in the jail's own /run).
  std::string resolv_conf = "/etc/resolv.conf";
  // Names the resolver answers although they look like they carry data (--dns-allow).
  std::vector<std::string> dns_allow;
};

struct trust_spec {
  std::string system_bundle = "/etc/ssl/certs/ca-certificates.crt";
  std::optional<std::string> airlock_ca;  // canonical host path of --ca
  std::string inside_dir = "/run/airlock";
  // Java: a JKS store of the JVM's cacerts + the Airlock CA, made by keytool once per CA and
  // cacerts and cached (trust.hpp), bound over the JVM's cacerts. Only with --ca and keytool.
  bool java = false;
  bool java_tool_options = false;  // --java-truststore: also name it in JAVA_TOOL_OPTIONS
  std::string keytool;
  std::string java_cacerts;  // canonical host path of the JVM's cacerts; empty: none found
  // Canonical paths the jail's bundle is bound over (system_bundle_paths() that exist).
  std::vector<std::string> bundle_targets;
};

// The jail's home (docs/launcher.md, "Home").
enum class home_mode {
  layer,    // a private tmpfs layered (overlayfs) over the caller's home: writes discarded
  dir,      // --home DIR bound writable at the home: writes kept in DIR
  scratch,  // the caller has no home directory: an empty private tmpfs at `path`
};

struct home_spec {
  home_mode mode = home_mode::layer;
  std::string path;    // the home inside the jail (HOME)
  std::string source;  // canonical host directory (--home DIR) or the caller's home (layer)
};

struct plan {
  // Namespaces created by clone(2); the cgroup namespace is entered later, once the child
  // sits in its own cgroup.
  int clone_flags = 0;
  uid_t outside_uid = 0, inside_uid = 0;
  gid_t outside_gid = 0, inside_gid = 0;
  // Unprivileged callers must write "deny" to /proc/PID/setgroups before gid_map
  // (user_namespaces(7), since Linux 3.19); root may instead drop supplementary groups.
  bool deny_setgroups = true;
  std::string hostname = "airlock";
  std::vector<mount_step> mounts;   // in order; pivot_root last
  std::vector<std::string> hidden;  // canonical host paths hidden inside (for messages)
  std::string workdir;              // canonical; the same path inside
  std::vector<std::string> argv;
  environment env;
  limit_spec limits;
  relay_spec relay;
  capture_spec capture;
  trust_spec trust;
  home_spec home;
  std::uint64_t tmpfs_bytes = 0;  // size of /tmp, /dev/shm and the home layer, each
  bool self_test = false;
  // The caller's stdio includes a terminal: the command gets a pty of the jail's (terminal.hpp).
  // Set by run(), not by build_plan (which asks the host nothing).
  bool terminal = false;
  // The caller has a controlling terminal (or a terminal on its stdio): the jail leaves its
  // session (setsid), not only its process group. Set by run() too.
  bool new_session = false;
  bool verbose = false;
};

struct plan_result {
  std::optional<plan> value;
  std::string error;  // one line, when value is empty
};

// The system CA bundle paths of the common distributions: with --ca, each that exists is
// the jail's bundle inside (bound over), for clients that read only their build's default.
const std::vector<std::string>& system_bundle_paths();

// --tmpfs-size default: 1 GiB each for /tmp, /dev/shm and the home layer.
inline constexpr std::uint64_t default_tmpfs_bytes = 1ULL << 30;

// The size and inode options of a tmpfs of `bytes` (tmpfs(5) size=, nr_inodes=): an inode per
// 4 KiB, at least min_tmpfs_inodes, so that empty files cannot fill kernel memory.
inline constexpr std::uint64_t min_tmpfs_inodes = 4096;
std::string tmpfs_limits(std::uint64_t bytes);

// Paths that are hidden without being asked for, relative to home when they start with "~/".
const std::vector<std::string>& builtin_hidden_paths();
// Whether a built-in hidden path names a file (~/.netrc) rather than a directory (~/.aws):
// what is made, when it does not exist yet, to cover it.
bool builtin_hidden_is_file(const std::string& path);

plan_result build_plan(const options& o, const host_facts& host);

// Human-readable one-line description of a step, for --verbose and for tests' messages.
std::string describe(const mount_step& step);

}  // namespace airlock::launcher
