#include "launcher/plan.hpp"

#include "core/str_cat.hpp"
#include "launcher/address.hpp"
#include "launcher/plan_paths.hpp"

#include <sched.h>

#include <algorithm>
#include <tuple>

namespace airlock::launcher {
namespace {

using core::str_cat;

// Directories whose contents the kernel makes, and which must never be bound writable from
// the host (a writable host /proc or /sys inside would undo the namespaces).
constexpr std::string_view kernel_dirs[] = {"/proc", "/sys", "/dev"};

std::size_t depth(std::string_view path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/')) -
         (path == "/" ? 1 : 0);
}

struct hidden_path {
  std::string path;  // canonical
  bool is_dir;
  std::string why;  // for messages
};

struct exposed {
  std::string what;  // "--rw", "--ro", "the work directory"
  std::string path;  // canonical
  bool writable = false;
  bool is_dir = true;
};

}  // namespace

const std::vector<std::string>& builtin_hidden_paths() {
  // Credentials that commonly sit in a home directory or /etc. Hidden only where they exist.
  static const std::vector<std::string> paths = {
      "/etc/shadow",
      "/etc/shadow-",
      "/etc/gshadow",
      "/etc/gshadow-",
      "/etc/ssh",
      "/etc/sudoers",
      "/etc/sudoers.d",
      "~/.ssh",
      "~/.aws",
      "~/.azure",
      "~/.gnupg",
      "~/.netrc",
      "~/.git-credentials",
      "~/.docker",
      "~/.kube",
      "~/.config/gcloud",
      "~/.config/gh",
      "~/.npmrc",
      "~/.pypirc",
      "~/.cargo/credentials",
      "~/.cargo/credentials.toml",
      "~/.password-store",
      "~/.local/share/keyrings",
  };
  return paths;
}

const std::vector<std::string>& system_bundle_paths() {
  // Go's crypto/x509 list (root_linux.go), which covers the usual distributions.
  static const std::vector<std::string> paths = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Gentoo, Arch
      "/etc/pki/tls/certs/ca-bundle.crt",                   // Fedora, RHEL 6
      "/etc/ssl/ca-bundle.pem",                             // openSUSE
      "/etc/pki/tls/cacert.pem",                            // OpenELEC
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // CentOS, RHEL 7
      "/etc/ssl/cert.pem",                                  // Alpine
  };
  return paths;
}

std::string tmpfs_limits(std::uint64_t bytes) {
  // size= bounds the data, not the inodes: without nr_inodes= the kernel allows half the RAM's
  // pages' worth, each empty file costing about 1.3 KiB of unswappable slab (tmpfs(5)). One
  // inode per 4 KiB page, and never fewer than a small project's worth of files.
  const std::uint64_t inodes = std::max<std::uint64_t>(bytes / 4096, min_tmpfs_inodes);
  return str_cat("size=", bytes, ",nr_inodes=", inodes);
}

std::string describe(const mount_step& s) {
  switch (s.kind) {
    case mount_kind::private_propagation:
      return "make every mount private";
    case mount_kind::root_ro:
      return "bind / read-only";
    case mount_kind::tmpfs:
      return str_cat("tmpfs ", s.target, " (", s.data, ')');
    case mount_kind::dev:
      return str_cat("minimal ", s.target);
    case mount_kind::proc:
      return str_cat("new proc at ", s.target);
    case mount_kind::sysfs:
      return str_cat("new sysfs at ", s.target);
    case mount_kind::trust:
      return str_cat("trust bundle at ", s.target, " (read-only)");
    case mount_kind::resolv_conf:
      return str_cat("the jail's resolver in ", s.target, " (read-only)");
    case mount_kind::bind:
      return str_cat("bind ", s.source, " at ", s.target, s.writable ? " (rw)" : " (ro)");
    case mount_kind::hide:
      return str_cat("hide ", s.target);
    case mount_kind::protect_ro:
      return str_cat("read-only ", s.target);
    case mount_kind::remount_ro:
      return str_cat("remount ", s.target, " read-only");
    case mount_kind::pivot_root:
      return "pivot_root into the new root";
    case mount_kind::trust_file:
      return str_cat("the jail's ", s.source, " over ", s.target, " (read-only)");
    case mount_kind::home_layer:
      return str_cat("private writable layer over ", s.target, " (", s.data, ')');
  }
  return "?";
}

namespace {

// The steps of build_plan, in order, over the plan being built and what they share. Each
// returns "" or the one-line error that stops the plan.
class planner {
 public:
  planner(const options& opts, const host_facts& facts) : o(opts), host(facts) {}

  plan_result build() {
    using step = std::string (planner::*)();
    for (step s :
         {&planner::check_command, &planner::set_command_and_ids, &planner::expose_work_directory,
          &planner::expose_paths, &planner::choose_home, &planner::hide_host_secrets,
          &planner::add_mount_steps, &planner::set_environment, &planner::set_limits}) {
      if (auto e = (this->*s)(); !e.empty()) return {std::nullopt, std::move(e)};
    }
    return {std::move(p), {}};
  }

 private:
  std::string check_command();
  std::string set_command_and_ids();
  std::string expose_work_directory();
  std::string expose_paths();
  std::string choose_home();
  std::string hide_host_secrets();
  std::string add_mount_steps();
  std::string set_environment();
  std::string set_limits();

  // A path to bind, canonical, or why it cannot be bound.
  struct resolved {
    std::optional<exposed> value;
    std::string why;
    explicit operator bool() const { return value.has_value(); }
    const exposed* operator->() const { return &*value; }
    const exposed& operator*() const { return *value; }
  };
  resolved resolve(const std::string& what, const std::string& raw, bool writable) const;
  void add_hidden(const std::string& canon, std::string why);
  hide_context hide_needs() const;

  const options& o;
  const host_facts& host;
  plan p;
  std::vector<exposed> binds;    // the work directory, --rw, --ro, --home (canonical)
  std::vector<jail_root> roots;  // where a jailed run may have planted links
  std::vector<hidden_path> hidden;
};

planner::resolved planner::resolve(const std::string& what, const std::string& raw,
                                   bool writable) const {
  auto canon = host.canonical(absolute_path(raw, host.cwd));
  if (!canon) return {std::nullopt, str_cat(what, ' ', raw, ": no such file or directory")};
  if (*canon == "/")
    return {std::nullopt, str_cat(what, ' ', raw, ": refusing to expose / itself")};
  for (auto k : kernel_dirs) {
    if (is_within(*canon, k)) {
      return {std::nullopt, str_cat(what, ' ', raw, ": refusing to bind ", *canon,
                                    " (the jail has its own ", k, ')')};
    }
  }
  return {exposed{what, *canon, writable, host.is_dir(*canon)}, {}};
}

void planner::add_hidden(const std::string& canon, std::string why) {
  for (const auto& h : hidden) {
    if (h.path == canon) return;
  }
  hidden.push_back({canon, host.is_dir(canon), std::move(why)});
}

std::string planner::check_command() {
  if (!o.self_test && (o.command.empty() || o.command[0].empty())) return "missing command";
  if (!parse_proxy_address(o.proxy))
    return str_cat(
        "--proxy: expected IP:PORT, [IPv6]:PORT, localhost:PORT or unix:/ABSOLUTE/PATH, got '",
        o.proxy, "'");
  return {};
}

std::string planner::set_command_and_ids() {
  p.verbose = o.verbose;
  p.argv = o.command;
  p.self_test = o.self_test;
  if (o.self_test) p.argv = {"airlock-self-test"};
  p.tmpfs_bytes = o.tmpfs_bytes.value_or(default_tmpfs_bytes);
  p.clone_flags =
      CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  p.outside_uid = p.inside_uid = host.uid;
  p.outside_gid = p.inside_gid = host.gid;
  p.deny_setgroups = host.uid != 0;
  return {};
}

// The work directory: never the home or a system directory (plan_paths.hpp). Also the
// directories a jailed run may have written, where it may have planted symlinks for a later
// run to follow: the current directory (when it could be a work directory) and this one.
std::string planner::expose_work_directory() {
  const std::string advice = "cd into a project directory, or name one with --workdir DIR";
  if (writable_dir_refusal({"the work directory", host.cwd, host.cwd, advice}, host).empty())
    roots.push_back({"the current directory", host.cwd});
  const std::string raw = o.workdir.value_or(host.cwd);
  if (o.workdir) {
    if (auto e = symlink_escape({"--workdir", raw}, roots, host); !e.empty()) return e;
  }
  auto w = resolve("the work directory", raw, true);
  if (!w) return w.why;
  if (!w->is_dir) return str_cat("the work directory ", raw, " is not a directory");
  if (auto why = writable_dir_refusal({"the work directory", raw, w->path, advice}, host);
      !why.empty())
    return why;
  p.workdir = w->path;
  binds.push_back(*w);
  if (roots.empty() || roots.front().path != p.workdir)
    roots.push_back({"the work directory", p.workdir});
  return {};
}

std::string planner::expose_paths() {
  // A --rw/--ro path must not follow a link planted in the work directory: a jailed run can
  // replace deps/ by a link to anywhere, for the next run's --rw deps/cache.
  for (const auto& [list, what, writable] :
       {std::tuple{&o.rw, "--rw", true}, std::tuple{&o.ro, "--ro", false}}) {
    for (const auto& r : *list) {
      auto e = resolve(what, r, writable);
      if (!e) return e.why;
      if (auto link = symlink_escape({what, r}, roots, host); !link.empty()) return link;
      binds.push_back(*e);
    }
  }
  return {};
}

// The jail's home (docs/launcher.md, "Home").
std::string planner::choose_home() {
  const bool has_home = !host.home.empty() && host.home != "/" && host.canonical(host.home) &&
                        host.is_dir(*host.canonical(host.home));
  const std::string home = has_home ? *host.canonical(host.home) : std::string();
  if (o.home) {
    auto dir = host.canonical(absolute_path(*o.home, host.cwd));
    if (!dir || !host.is_dir(*dir)) return str_cat("--home ", *o.home, ": no such directory");
    for (auto k : kernel_dirs) {
      if (is_within(*dir, k)) return str_cat("--home ", *o.home, ": refusing ", *dir);
    }
    if (*dir == "/") return "--home /: refusing to expose / itself";
    if (auto e = symlink_escape({"--home", *o.home}, roots, host); !e.empty()) return e;
    if (auto e =
            writable_dir_refusal({"--home", *o.home, *dir,
                                  "name a directory of its own (say, .agent-home in a project)"},
                                 host);
        !e.empty())
      return e;
    p.home = {home_mode::dir, has_home ? home : *dir, *dir};
    // Checked with the binds from here on; its step binds it at the home, not in place.
    binds.push_back({"--home", *dir, true, true});
  } else if (has_home) {
    p.home = {home_mode::layer, home, home};
  } else {
    p.home = {home_mode::scratch, "/run/home", {}};
  }
  return {};
}

// What hiding a directory whole must not cover (plan_paths.hpp).
hide_context planner::hide_needs() const {
  hide_context ctx;
  for (const auto& b : binds)
    ctx.binds.emplace_back(b.what, b.path);
  if (!p.home.path.empty()) ctx.needed.emplace_back("the home", p.home.path);
  for (const auto& b : system_bundle_paths()) {
    if (auto c = host.canonical(b)) ctx.needed.emplace_back("the system CA bundle", *c);
  }
  for (const char* f : {"/etc/resolv.conf", "/etc/ssl/certs/java/cacerts"}) {
    if (auto c = host.canonical(f)) ctx.needed.emplace_back(f, *c);
  }
  for (const char* d : {"/tmp", "/var/tmp", "/run", "/dev", "/proc", "/sys"})
    ctx.private_dirs.emplace_back(d);
  return ctx;
}

// What is hidden; nothing bound may re-expose it.
std::string planner::hide_host_secrets() {
  for (const auto& h : o.hide) {
    auto canon = host.canonical(absolute_path(h, host.cwd));
    if (!canon) continue;  // nothing there to read
    if (*canon == "/") return "--hide /: refusing to hide the whole file system";
    add_hidden(*canon, str_cat("--hide ", h));
  }
  const hide_context ctx = hide_needs();
  // The CA key: hide its whole directory (where the proxy keeps its other files too), unless
  // that directory holds something the jail needs — then just the key.
  if (o.ca_key) {
    auto canon = host.canonical(absolute_path(*o.ca_key, host.cwd));
    if (!canon) return str_cat("--ca-key ", *o.ca_key, ": no such file");
    add_hidden(key_hide(*canon, ctx), str_cat("--ca-key ", *o.ca_key));
  }
  if (o.ca) {
    auto canon = host.canonical(absolute_path(*o.ca, host.cwd));
    if (!canon) return str_cat("--ca ", *o.ca, ": no such file");
    if (host.is_dir(*canon)) return str_cat("--ca ", *o.ca, ": is a directory");
    p.trust.airlock_ca = *canon;
    if (auto key = host.canonical(parent_dir(*canon) + "/ca.key"))
      add_hidden(key_hide(*key, ctx), "the key next to --ca");
  }
  // --policy: the proxy's secret files, policy and audit log, by directory (plan_paths.hpp).
  for (const auto& f : o.hide_dir_of) {
    std::vector<std::string> paths;
    if (auto e = dir_of_hides(f, ctx, host, paths); !e.empty()) return e;
    for (const auto& h : paths)
      add_hidden(h, f.why);
  }
  // The proxy's relay socket trusts whoever connects to name the agent: the command must not
  // reach it. Where the jail sees the host's file system (not below /run, /tmp or /dev,
  // which are its own), its directory is hidden like the CA key's — a directory rather than
  // the socket, so that a proxy that re-creates the socket does not bring it back (unlinking
  // a mount point takes the mount away, since Linux 3.18).
  if (auto path = unix_path_of(o.proxy)) {
    const std::string socket_path(*path);
    const std::string dir = parent_dir(socket_path);
    auto canon_dir = host.canonical(dir);
    if (!canon_dir) return str_cat("--proxy ", o.proxy, ": no such directory ", dir);
    const std::string canon =
        str_cat(*canon_dir == "/" ? "" : *canon_dir, socket_path.substr(socket_path.rfind('/')));
    for (const auto& b : binds) {
      if (is_within(canon, b.path)) {
        return str_cat("--proxy ", o.proxy, " lies inside ", b.what, ' ', b.path,
                       ", where the command could reach it");
      }
    }
    const bool private_inside =
        std::any_of(ctx.private_dirs.begin(), ctx.private_dirs.end(),
                    [&](const std::string& d) { return is_within(canon, d); });
    if (!private_inside) add_hidden(key_hide(canon, ctx), str_cat("--proxy ", o.proxy));
  }
  for (const auto& b : builtin_hidden_paths()) {
    std::string path = b;
    if (b.starts_with("~/")) {
      if (host.home.empty() || host.home == "/") continue;
      path = str_cat(host.home, b.substr(1));
    }
    if (auto canon = host.canonical(path)) add_hidden(*canon, str_cat("built in (", b, ')'));
  }

  // --ro/--rw, --home (and the work directory) must not re-expose anything hidden. Both
  // sides are canonical, so a symlink cannot smuggle a hidden path back in.
  for (const auto& b : binds) {
    for (const auto& h : hidden) {
      if (is_within(b.path, h.path)) {
        return str_cat(b.what, ' ', b.path, " is inside hidden path ", h.path, " (", h.why, ")");
      }
    }
  }
  return {};
}

// The mount steps, in the order run.cpp executes them.
std::string planner::add_mount_steps() {
  auto& m = p.mounts;
  auto add = [&m](mount_kind kind, std::string target) -> mount_step& {
    mount_step s;
    s.kind = kind;
    s.target = std::move(target);
    return m.emplace_back(std::move(s));
  };
  add(mount_kind::private_propagation, "/");
  add(mount_kind::root_ro, "/").source = "/";
  add(mount_kind::sysfs, "/sys").optional = true;
  add(mount_kind::proc, "/proc");
  // As Docker does: the parts of /proc that configure the host stay read-only, and the ones
  // that only leak (kernel memory, keys, timers) are masked.
  for (const char* t : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"})
    add(mount_kind::protect_ro, t).optional = true;
  for (const char* t : {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"}) {
    auto& h = add(mount_kind::hide, t);
    h.is_dir = false;
    h.optional = true;
  }
  for (const char* t : {"/proc/acpi", "/proc/scsi"})
    add(mount_kind::hide, t).optional = true;
  add(mount_kind::dev, "/dev").data =
      str_cat("mode=1777,", tmpfs_limits(p.tmpfs_bytes));  // its /dev/shm
  {
    auto& t = add(mount_kind::tmpfs, "/tmp");
    t.writable = true;
    t.data = str_cat("mode=1777,", tmpfs_limits(p.tmpfs_bytes));
  }
  if (host.canonical("/var/tmp") == std::optional<std::string>("/var/tmp") &&
      host.is_dir("/var/tmp")) {
    // The other world-writable scratch directory: private too, or a host program's Unix
    // socket there would be reachable (connect(2) needs no write access to the mount, and
    // path sockets ignore network namespaces).
    auto& t = add(mount_kind::tmpfs, "/var/tmp");
    t.writable = true;
    t.data = str_cat("mode=1777,", tmpfs_limits(p.tmpfs_bytes));
  }
  {
    // Only the jail's own few files (resolv.conf, the trust directory's mount point).
    auto& r = add(mount_kind::tmpfs, "/run");
    r.writable = true;
    r.data = str_cat("mode=0755,", tmpfs_limits(16U << 20));
  }
  add(mount_kind::trust, p.trust.inside_dir);
  if (o.ca) {
    // Clients that read only their build's default bundle (wget with GnuTLS, a static
    // binary) see the jail's bundle there. Canonical paths, each once.
    for (const auto& b : system_bundle_paths()) {
      auto canon = host.canonical(b);
      if (!canon || host.is_dir(*canon)) continue;
      if (std::find(p.trust.bundle_targets.begin(), p.trust.bundle_targets.end(), *canon) ==
          p.trust.bundle_targets.end())
        p.trust.bundle_targets.push_back(*canon);
    }
    for (const auto& t : p.trust.bundle_targets) {
      auto& f = add(mount_kind::trust_file, t);
      f.source = "ca-bundle.crt";
      f.is_dir = false;
    }
    if (!host.keytool.empty()) {
      // The JVM's cacerts: Debian's, where the JDK links it, else the one next to keytool.
      auto cacerts = host.canonical("/etc/ssl/certs/java/cacerts");
      if (!cacerts) {
        if (auto kt = host.canonical(host.keytool))
          cacerts = host.canonical(str_cat(parent_dir(parent_dir(*kt)), "/lib/security/cacerts"));
      }
      if (cacerts && !host.is_dir(*cacerts)) {
        p.trust.java = true;
        p.trust.keytool = host.keytool;
        p.trust.java_cacerts = *cacerts;
        auto& f = add(mount_kind::trust_file, *cacerts);
        f.source = "truststore.jks";
        f.is_dir = false;
      }
    }
  }
  // The home goes before the binds: a work directory inside it lands on top of the layer.
  if (p.home.mode == home_mode::layer) {
    auto& h = add(mount_kind::home_layer, p.home.path);
    h.source = p.home.source;
    h.data = tmpfs_limits(p.tmpfs_bytes);
  } else if (p.home.mode == home_mode::scratch) {
    auto& t = add(mount_kind::tmpfs, p.home.path);
    t.writable = true;
    t.data = str_cat("mode=0700,", tmpfs_limits(p.tmpfs_bytes));
  } else {
    auto& b = add(mount_kind::bind, p.home.path);
    b.source = p.home.source;
    b.writable = true;
  }
  p.capture.enabled = o.capture != capture_mode::off;
  p.capture.required = o.capture == capture_mode::on;
  p.capture.dns_allow = o.dns_allow;
  // --home was checked with the binds; its step (above) binds it at the home, not in place.
  std::erase_if(binds, [](const exposed& b) { return b.what == "--home"; });
  // Parents before children, so --ro /w/.git lands on top of the work directory /w.
  std::stable_sort(binds.begin(), binds.end(), [](const exposed& a, const exposed& b) {
    return depth(a.path) < depth(b.path);
  });
  for (const auto& b : binds) {
    auto& s = add(mount_kind::bind, b.path);
    s.source = b.path;
    s.writable = b.writable;
    s.is_dir = b.is_dir;
  }
  if (p.capture.enabled) {
    // glibc reads /etc/resolv.conf through any symlink; the jail's copy goes where the link
    // ends. Without the file at all, glibc asks 127.0.0.1 anyway (resolv.conf(5)).
    if (auto canon = host.canonical("/etc/resolv.conf")) p.capture.resolv_conf = *canon;
    auto& r = add(mount_kind::resolv_conf, p.capture.resolv_conf);
    r.is_dir = false;
    r.optional = true;
  }
  // Hides go last so that no bind can land on top of one. They are optional: a hidden path
  // that the jail cannot see anyway (say, below the host's /tmp) needs no cover.
  for (const auto& h : hidden) {
    auto& s = add(mount_kind::hide, h.path);
    s.is_dir = h.is_dir;
    s.optional = true;
    p.hidden.push_back(h.path);
  }
  add(mount_kind::remount_ro, "/run");
  add(mount_kind::remount_ro, "/dev");
  add(mount_kind::pivot_root, "/");
  return {};
}

std::string planner::set_environment() {
  if (o.java_truststore) {
    if (host.keytool.empty()) return "--java-truststore: keytool not found on PATH";
    if (!o.ca) return "--java-truststore: needs --ca (the JVM trusts its cacerts already)";
    if (!p.trust.java) return "--java-truststore: no JVM cacerts found to start from";
    p.trust.java_tool_options = true;
  }
  trust_paths tp{str_cat(p.trust.inside_dir, "/ca-bundle.crt"),
                 str_cat(p.trust.inside_dir, "/certs"), std::nullopt};
  if (p.trust.java_tool_options) tp.java_store = str_cat(p.trust.inside_dir, "/truststore.jks");
  p.env = build_environment(host.environ, o.env, o.relay_port, tp);
  remove_variables(p.env, o.env_remove, o.env);
  {
    // HOME names the jail's home unless --env set it.
    bool set_by_caller = false;
    for (const auto& e : o.env)
      set_by_caller = set_by_caller || e.starts_with("HOME=");
    if (!set_by_caller) {
      std::erase_if(p.env.entries, [](const std::string& e) { return e.starts_with("HOME="); });
      p.env.entries.push_back(str_cat("HOME=", p.home.path));
    }
  }
  return {};
}

// Limits and the relay to the proxy.
std::string planner::set_limits() {
  p.limits.memory_bytes = o.memory_bytes;
  p.limits.cpu_millis = o.cpu_millis;
  if (o.pids) p.limits.pids = *o.pids + 1;  // + the jail's init
  p.limits.timeout = o.timeout;
  p.limits.fsize_bytes = o.fsize_bytes;
  p.limits.nofile = o.nofile;
  if (o.cgroup) {
    auto canon = host.canonical(absolute_path(*o.cgroup, host.cwd));
    if (!canon || !host.is_dir(*canon))
      return str_cat("--cgroup ", *o.cgroup, ": no such directory");
    p.limits.cgroup_parent = *canon;
  }

  p.relay.proxy = o.proxy;
  p.relay.port = o.relay_port;
  p.relay.agent = o.agent;
  p.relay.proxy_protocol = o.proxy_protocol;
  return {};
}

}  // namespace

plan_result build_plan(const options& o, const host_facts& host) {
  return planner(o, host).build();
}

}  // namespace airlock::launcher
