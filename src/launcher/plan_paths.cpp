#include "launcher/plan_paths.hpp"

#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::launcher {
namespace {

using core::str_cat;

// System directories that may not be the work directory, nor anything below them: the jail
// would write the host's configuration, programs, libraries, logs or package state, or reach
// the sockets of /run (the user's D-Bus, gpg-agent, the container runtime's).
constexpr std::string_view system_trees[] = {
    "/etc",      "/usr",         "/bin",     "/sbin",      "/boot",
    "/run",      "/var/lib",     "/var/log", "/var/cache", "/var/spool",
    "/var/mail", "/var/backups", "/var/run", "/var/lock",  "/var/opt",
};

// Directories that hold other people's or other programs' directories: refused themselves
// (everyone's files would be writable), while a project directory below them is fine.
constexpr std::string_view system_parents[] = {"/home", "/root", "/var", "/tmp",  "/var/tmp",
                                               "/opt",  "/srv",  "/mnt", "/media"};

// /lib, /lib32, /lib64, /libx32 and whatever else a distribution puts at /lib*.
bool in_lib_tree(std::string_view dir) {
  if (!dir.starts_with("/lib")) return false;
  const auto slash = dir.find('/', 1);
  return slash == std::string_view::npos || slash > 4;
}

std::string_view system_dir_of(std::string_view dir) {
  for (auto t : system_trees) {
    if (is_within(dir, t)) return t;
  }
  for (auto p : system_parents) {
    if (dir == p) return p;
  }
  if (in_lib_tree(dir)) return dir.substr(0, dir.find('/', 1));
  return {};
}

constexpr std::string_view what_to_do =
    "; cd into a project directory, or name one with --workdir DIR";

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

std::string workdir_refusal(const std::string& raw, const std::string& dir,
                            const host_facts& host) {
  const std::string shown = raw == dir ? dir : str_cat(raw, " (", dir, ')');
  // Both spellings of the home: $HOME and the password database's, canonical.
  for (const auto& h : {host.home, host.passwd_home}) {
    if (h.empty() || h == "/") continue;
    const auto home = host.canonical(h);
    if (!home) continue;
    if (*home == dir) {
      return str_cat("the work directory ", shown,
                     " is your home directory: ~/.bashrc, ~/.profile and every other dotfile "
                     "would be writable from the jail",
                     what_to_do);
    }
    if (is_within(*home, dir)) {
      return str_cat("the work directory ", shown, " contains your home directory ", *home,
                     ": your dotfiles would be writable from the jail", what_to_do);
    }
  }
  if (const auto sys = system_dir_of(dir); !sys.empty()) {
    return str_cat("the work directory ", shown, " is ",
                   sys == dir ? "a system directory" : str_cat("below the system directory ", sys),
                   ", which the jail must not write", what_to_do);
  }
  return {};
}

std::string symlink_escape(const std::string& what, const std::string& given,
                           const std::string& canon, const std::string& workdir_given,
                           const std::string& workdir, const host_facts& host) {
  std::string base;
  if (is_within(given, workdir)) {
    base = workdir;
  } else if (is_within(given, workdir_given)) {
    base = workdir_given;
  } else {
    return {};  // named outside the work directory: taken as it is
  }
  if (is_within(canon, workdir)) return {};
  // The first component below the work directory that leads out of it: the planted link.
  std::string prefix = base;
  std::string_view rest = std::string_view(given).substr(base.size());
  while (!rest.empty()) {
    while (rest.starts_with('/'))
      rest.remove_prefix(1);
    const auto part = rest.substr(0, rest.find('/'));
    if (part.empty()) break;
    rest.remove_prefix(part.size());
    prefix = str_cat(prefix == "/" ? "" : prefix, '/', part);
    if (part == "." || part == "..") continue;  // only a name can be a link
    const auto c = host.canonical(prefix);
    if (!c || !is_within(*c, workdir)) {
      return str_cat(what, ' ', given, ": ", prefix, " leads to ", c.value_or("?"),
                     ", outside the work directory ", workdir,
                     " (a symlink there may have been planted by a jailed run); refusing to "
                     "follow it: name the target itself if that is what you mean");
    }
  }
  return str_cat(what, ' ', given, " resolves to ", canon, ", outside the work directory ", workdir,
                 "; refusing to follow it: name the target itself if that is what you mean");
}

std::string dir_of_hides(const hidden_dir_of& f,
                         const std::vector<std::pair<std::string, std::string>>& binds,
                         const host_facts& host, std::vector<std::string>& out) {
  const std::string named = absolute_path(f.path, host.cwd);
  const auto file = host.canonical(named);
  std::vector<std::string> dirs;
  for (const auto& d : {parent_dir(named), file ? parent_dir(*file) : std::string()}) {
    if (d.empty()) continue;
    if (auto c = host.canonical(d); c && std::find(dirs.begin(), dirs.end(), *c) == dirs.end())
      dirs.push_back(*c);
  }
  for (const auto& dir : dirs) {
    const std::pair<std::string, std::string>* held = nullptr;
    for (const auto& b : binds) {
      if (is_within(b.second, dir)) held = &b;
    }
    if (!held && dir != "/") {
      out.push_back(dir);
      continue;
    }
    if (f.required) {
      return str_cat(f.why, " is ", f.path, ", in ", dir, ", which holds ", held ? held->first : "",
                     held ? " " : "", held ? held->second : "everything",
                     ": that directory is hidden from the jail whole (so that a secret rotated by "
                     "rename stays hidden), which would hide the work directory too. Move the "
                     "secret to a directory of its own, or work in another directory");
    }
    if (file) out.push_back(*file);  // the directory is needed: the file alone
  }
  return {};
}

}  // namespace airlock::launcher
