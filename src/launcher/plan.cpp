#include "launcher/plan.hpp"

#include "core/str_cat.hpp"
#include "launcher/address.hpp"
#include "launcher/plan_builder.hpp"
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

}  // namespace

namespace plan_detail {

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

// The directories named writable besides the work directory, --rw and --home DIR: a jailed run
// with the same options could write them, so may have planted symlinks there for a later run
// to follow through another path named below them (--ro DIR/sub, --workdir DIR/proj).
std::vector<jail_root> planner::writable_roots() const {
  std::vector<jail_root> out;
  auto add = [&](const char* what, const std::string& raw) {
    auto canon = host.canonical(absolute_path(raw, host.cwd));
    if (canon && *canon != "/" && host.is_dir(*canon)) out.push_back({what, *canon});
  };
  for (const auto& r : o.rw)
    add("--rw", r);
  if (o.home) add("--home", *o.home);
  return out;
}

// symlink_escape, and then that the path it checked is the canonical path to be bound.
std::string planner::check_links(const named_path& named, const std::string& canonical,
                                 const std::vector<jail_root>& in) const {
  std::string checked;
  if (auto e = symlink_escape(named, in, host, &checked); !e.empty()) return e;
  return changed_while_checked(named, canonical, checked);
}

// The work directory: never the home or a system directory (plan_paths.hpp). Also the
// directories a jailed run may have written, where it may have planted symlinks for a later
// run to follow: the current directory (when it could be a work directory), this one, and
// the --rw paths and --home DIR.
std::string planner::expose_work_directory() {
  const std::string advice = "cd into a project directory, or name one with --workdir DIR";
  if (writable_dir_refusal({"the work directory", host.cwd, host.cwd, advice}, host).empty())
    roots.push_back({"the current directory", host.cwd});
  const auto writable = writable_roots();
  const std::string raw = o.workdir.value_or(host.cwd);
  auto w = resolve("the work directory", raw, true);
  if (!w) return w.why;
  if (o.workdir) {
    auto in = roots;
    in.insert(in.end(), writable.begin(), writable.end());
    if (auto e = check_links({"--workdir", raw}, w->path, in); !e.empty()) return e;
  }
  if (!w->is_dir) return str_cat("the work directory ", raw, " is not a directory");
  if (auto why = writable_dir_refusal({"the work directory", raw, w->path, advice}, host);
      !why.empty())
    return why;
  p.workdir = w->path;
  binds.push_back(*w);
  if (roots.empty() || roots.front().path != p.workdir)
    roots.push_back({"the work directory", p.workdir});
  roots.insert(roots.end(), writable.begin(), writable.end());
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
      if (auto link = check_links({what, r}, e->path, roots); !link.empty()) return link;
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
    if (auto e = check_links({"--home", *o.home}, *dir, roots); !e.empty()) return e;
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

// A built-in credential path of the home that does not exist yet: in the home's private layer
// its mount point can be made (in the layer's tmpfs, never on the host) and covered, so that
// what the caller creates there while the jail runs stays out of it. The path goes where its
// deepest existing directory leads; only inside the layered home and outside every bind (the
// work directory, --rw, --ro: a mount point made there would be made on the host) is it made.
void planner::hide_missing_in_home(const std::string& builtin, const std::string& path) {
  if (p.home.mode != home_mode::layer || !builtin.starts_with("~/")) return;
  std::string existing = parent_dir(path), rest = path.substr(existing.size());
  auto canon = host.canonical(existing);
  while (!canon && existing != "/" && !existing.empty()) {
    const std::string up = parent_dir(existing);
    rest = existing.substr(up == "/" ? 0 : up.size()) + rest;
    existing = up;
    canon = host.canonical(existing);
  }
  if (!canon || !host.is_dir(*canon)) return;
  const std::string target = str_cat(*canon == "/" ? "" : *canon, rest);
  if (!is_within(target, p.home.path) || target == p.home.path) return;
  for (const auto& b : binds) {
    if (is_within(target, b.path) || is_within(b.path, target)) return;
  }
  for (const auto& h : hidden) {
    if (h.path == target || is_within(target, h.path)) return;
  }
  hidden.push_back({target, !builtin_hidden_is_file(builtin),
                    str_cat("built in (", builtin, "), not there yet"), true});
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
    auto canon = host.canonical(path);
    if (!canon) {
      hide_missing_in_home(b, path);
      continue;
    }
    // With --home DIR, DIR is bound over the caller's home: what lies there is not in the
    // jail, and a hide at that path would land in DIR (where a link, the user's or a jailed
    // run's, would refuse every run). What a link in the home leads to elsewhere is hidden,
    // and so is what DIR itself holds or lies in (--home ~/.ssh is refused below).
    const bool under_home_dir = p.home.mode == home_mode::dir && is_within(*canon, p.home.path) &&
                                !is_within(*canon, p.home.source) &&
                                !is_within(p.home.source, *canon);
    if (under_home_dir) continue;
    add_hidden(*canon, str_cat("built in (", b, ')'));
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

}  // namespace plan_detail

plan_result build_plan(const options& o, const host_facts& host) {
  return plan_detail::planner(o, host).build();
}

}  // namespace airlock::launcher
