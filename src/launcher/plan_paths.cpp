#include "launcher/plan_paths.hpp"

#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::launcher {
namespace {

using core::str_cat;

// System directories that may not be bound writable, nor anything below them (but see
// workspace_trees): the jail would write the host's configuration, programs, libraries, logs
// or package state, or reach the sockets of /run (the user's D-Bus, gpg-agent, the container
// runtime's).
constexpr std::string_view system_trees[] = {
    "/etc",      "/usr",         "/bin",     "/sbin",      "/boot",
    "/run",      "/var/lib",     "/var/log", "/var/cache", "/var/spool",
    "/var/mail", "/var/backups", "/var/run", "/var/lock",  "/var/opt",
};

// Directories that hold other people's or other programs' directories: refused themselves
// (everyone's files would be writable), while a project directory below them is fine.
constexpr std::string_view system_parents[] = {"/home", "/root", "/var", "/tmp",  "/var/tmp",
                                               "/opt",  "/srv",  "/mnt", "/media"};

// Inside system_trees, where workspaces live: sources (/usr/src/app, Docker's usual WORKDIR)
// and services' state (/var/lib/jenkins/workspace/..., /var/lib/buildkite-agent/builds/...).
// The tree itself is refused; below /var/lib a service's own directory is too (it holds the
// service's configuration and credentials), a directory below it is fine.
struct workspace_tree {
  std::string_view path;
  bool service_dirs;  // its children are services' directories, refused themselves
};
constexpr workspace_tree workspace_trees[] = {
    {"/usr/src", false}, {"/usr/local/src", false}, {"/var/lib", true}};

// Below /var/lib: the package databases and the state by which the host boots, starts
// programs, installs software or authenticates. Refused with everything below them.
constexpr std::string_view var_lib_system[] = {
    "dpkg",
    "apt",
    "rpm",
    "dnf",
    "yum",
    "pacman",
    "systemd",
    "PackageKit",
    "snapd",
    "flatpak",
    "dkms",
    "initramfs-tools",
    "ucf",
    "polkit-1",
    "sudo",
    "pam",
    "AccountsService",
    "sss",
    "alternatives",
    "docker",
    "containerd",
    "containers",
    "kubelet",
    "lxc",
    "lxd",
    "libvirt",
    "machines",
    "portables",
    "extensions",
};

// /lib, /lib32, /lib64, /libx32 and whatever else a distribution puts at /lib*.
bool in_lib_tree(std::string_view dir) {
  if (!dir.starts_with("/lib")) return false;
  const auto slash = dir.find('/', 1);
  return slash == std::string_view::npos || slash > 4;
}

// The system directory that dir is or lies below, or "" when dir may be bound writable.
std::string_view system_dir_of(std::string_view dir) {
  for (const auto& t : workspace_trees) {
    if (!is_within(dir, t.path)) continue;
    if (dir == t.path) return t.path;
    const auto rest = dir.substr(t.path.size() + 1);
    const auto first = rest.substr(0, rest.find('/'));
    const auto top = dir.substr(0, t.path.size() + 1 + first.size());
    if (!t.service_dirs) return {};
    if (std::find(std::begin(var_lib_system), std::end(var_lib_system), first) !=
        std::end(var_lib_system))
      return top;
    return dir == top ? top : std::string_view();
  }
  for (auto t : system_trees) {
    if (is_within(dir, t)) return t;
  }
  for (auto p : system_parents) {
    if (dir == p) return p;
  }
  if (in_lib_tree(dir)) return dir.substr(0, dir.find('/', 1));
  return {};
}

// True for a directory the system needs whole: a system tree or parent itself, or /lib*.
bool is_system_dir(std::string_view dir) {
  if (dir == "/" || (in_lib_tree(dir) && dir.find('/', 1) == std::string_view::npos)) return true;
  return std::find(std::begin(system_trees), std::end(system_trees), dir) !=
             std::end(system_trees) ||
         std::find(std::begin(system_parents), std::end(system_parents), dir) !=
             std::end(system_parents);
}

// Why the jail needs `dir` whole, as a phrase ("holds the home /home/u"), or "".
std::string needed_by_the_jail(const std::string& dir, const hide_context& ctx) {
  for (const auto& [what, path] : ctx.needed) {
    if (is_within(path, dir)) return str_cat("holds ", what, ' ', path);
  }
  for (const auto& p : ctx.private_dirs) {
    if (is_within(p, dir)) return str_cat("holds the jail's own ", p);
  }
  if (is_system_dir(dir)) return "is a system directory";
  return {};
}

}  // namespace

std::string absolute_path(const std::string& path, const std::string& cwd) {
  if (path.starts_with('/')) return path;
  if (cwd.ends_with('/')) return cwd + path;
  return str_cat(cwd, '/', path);
}

bool is_within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir ||
         (path.starts_with(dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return "/";
  return path.substr(0, slash);
}

std::string writable_dir_refusal(const writable_dir& d, const host_facts& host) {
  const std::string shown =
      d.given == d.canonical ? d.canonical : str_cat(d.given, " (", d.canonical, ')');
  // Both spellings of the home: $HOME and the password database's, canonical.
  for (const auto& h : {host.home, host.passwd_home}) {
    if (h.empty() || h == "/") continue;
    const auto home = host.canonical(h);
    if (!home) continue;
    if (*home == d.canonical) {
      return str_cat(d.what, ' ', shown,
                     " is your home directory: ~/.bashrc, ~/.profile and every other dotfile "
                     "would be writable from the jail; ",
                     d.advice);
    }
    if (is_within(*home, d.canonical)) {
      return str_cat(d.what, ' ', shown, " contains your home directory ", *home,
                     ": your dotfiles would be writable from the jail; ", d.advice);
    }
  }
  const auto sys = system_dir_of(d.canonical);
  if (sys.empty()) return {};
  std::string where = "a system directory";
  if (sys != d.canonical) where = str_cat("below the system directory ", sys);
  return str_cat(d.what, ' ', shown, " is ", where, ", which the jail must not write; ", d.advice);
}

std::string symlink_escape(const named_path& p, const std::vector<jail_root>& roots,
                           const host_facts& host, std::string* checked) {
  if (checked) checked->clear();
  const std::string path = absolute_path(p.given, host.cwd);
  std::string at = "/";  // where the components so far resolve
  std::string spelled;   // the components so far, as given
  std::string_view rest = path;
  while (!rest.empty()) {
    while (rest.starts_with('/'))
      rest.remove_prefix(1);
    const auto part = rest.substr(0, rest.find('/'));
    if (part.empty()) break;
    rest.remove_prefix(part.size());
    spelled = str_cat(spelled, '/', part);
    if (part == ".") continue;
    if (part == "..") {
      at = parent_dir(at);
      continue;
    }
    const std::string plain = str_cat(at == "/" ? "" : at, '/', part);
    const auto next = host.canonical(plain);
    if (!next) return {};  // missing: the caller says so
    if (*next != plain) {  // part is a symlink
      for (const auto& root : roots) {
        if (!is_within(at, root.path) || is_within(*next, root.path)) continue;
        return str_cat(p.what, ' ', p.given, ": ", spelled, " leads to ", *next, ", outside ",
                       root.what, ' ', root.path,
                       " (a symlink there may have been planted by a jailed run); refusing to "
                       "follow it: name the target itself if that is what you mean");
      }
    }
    at = *next;
  }
  if (checked) *checked = at;
  return {};
}

std::string changed_while_checked(const named_path& p, const std::string& canonical,
                                  const std::string& checked) {
  if (checked == canonical) return {};
  return str_cat(p.what, ' ', p.given, ": resolved to ", canonical, " and then to ",
                 checked.empty() ? std::string("nothing") : checked,
                 " while it was checked (a symlink on the way was swapped, as a jailed run "
                 "writing there could do); refusing it");
}

std::string dir_of_hides(const hidden_dir_of& f, const hide_context& ctx, const host_facts& host,
                         std::vector<std::string>& out) {
  const std::string named = absolute_path(f.path, host.cwd);
  const auto file = host.canonical(named);
  std::vector<std::string> dirs;
  for (const auto& d : {parent_dir(named), file ? parent_dir(*file) : std::string()}) {
    if (d.empty()) continue;
    if (auto c = host.canonical(d); c && std::find(dirs.begin(), dirs.end(), *c) == dirs.end())
      dirs.push_back(*c);
  }
  for (const auto& dir : dirs) {
    std::string exposed;  // "the work directory /w": a bind the directory is or holds
    for (const auto& [what, path] : ctx.binds) {
      if (is_within(path, dir)) exposed = str_cat(what, ' ', path);
    }
    const std::string needed = needed_by_the_jail(dir, ctx);
    if (exposed.empty() && needed.empty()) {
      out.push_back(dir);
      continue;
    }
    const bool seen_by_the_jail =
        std::none_of(ctx.private_dirs.begin(), ctx.private_dirs.end(),
                     [&](const std::string& p) { return is_within(dir, p); });
    if (f.required && !exposed.empty()) {
      return str_cat(f.why, " is ", f.path, ", in ", dir, ", which holds ", exposed,
                     ": that directory is hidden from the jail whole (so that a secret rotated "
                     "by rename stays hidden), which would hide ",
                     exposed,
                     " too. Move the secret to a directory of its own, or work in "
                     "another directory");
    }
    if (f.required && seen_by_the_jail) {
      return str_cat(f.why, " is ", f.path, ", in ", dir, ", which ", needed,
                     ": the jail needs that directory, so only the file could be hidden, and a "
                     "secret rotated by rename there would be visible to the jail. Move the "
                     "secret to a directory of its own");
    }
    if (file) out.push_back(*file);  // the directory is needed: the file alone
  }
  return {};
}

std::string key_hide(const std::string& key, const hide_context& ctx) {
  const std::string dir = parent_dir(key);
  for (const auto& [what, path] : ctx.binds) {
    if (is_within(path, dir)) return key;
  }
  return needed_by_the_jail(dir, ctx).empty() ? dir : key;
}

}  // namespace airlock::launcher
