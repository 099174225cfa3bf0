#include "launcher/limits.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace airlock::launcher {
namespace {

using core::str_cat;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_text(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return step_failed(str_cat("open(", path, ')'));
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  errno = err;
  if (n != static_cast<ssize_t>(value.size()))
    return step_failed(str_cat("write(", path, ", ", value, ')'));
  return true;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (true) {
    auto pos = s.find(sep);
    out.emplace_back(s.substr(0, pos));
    if (pos == std::string_view::npos) break;
    s.remove_prefix(pos + 1);
  }
  return out;
}

bool has_word(std::string_view list, std::string_view word) {
  for (const auto& w : split(list, ' ')) {
    std::string t = w;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
      t.pop_back();
    if (t == word) return true;
  }
  return false;
}

// Removes airlock-<pid> cgroups that a launcher killed with SIGKILL left behind (they are
// empty: their processes died with the jail's init).
void remove_stale(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (!n.starts_with("airlock-")) continue;
    const std::string digits(n.substr(8));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(digits.c_str(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      ::rmdir(str_cat(parent, '/', n).c_str());
  }
  ::closedir(d);
}

std::optional<std::string> make_cgroup(const std::string& parent, const std::string& name) {
  remove_stale(parent);
  const std::string dir = str_cat(parent, '/', name);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    step_failed(str_cat("mkdir(", dir, ')'));
    return std::nullopt;
  }
  return dir;
}

// Counter "key N" in a flat-keyed cgroup file.
std::uint64_t counter(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

}  // namespace

std::string_view to_string(mechanism m) noexcept {
  switch (m) {
    case mechanism::none:
      return "none";
    case mechanism::cgroup_v2:
      return "cgroup-v2";
    case mechanism::cgroup_v1:
      return "cgroup-v1";
    case mechanism::rlimit:
      return "rlimit";
  }
  return "?";
}

cgroup_layout parse_cgroup_layout(std::string_view proc_self_cgroup, std::string_view mountinfo) {
  // hierarchy -> path: "0::/a/b" (v2), "4:memory:/x", "2:cpu,cpuacct:/y" (v1).
  std::optional<std::string> v2_path;
  std::map<std::string, std::string> v1_paths;
  for (const auto& line : split(proc_self_cgroup, '\n')) {
    auto first = line.find(':');
    if (first == std::string::npos) continue;
    auto second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.substr(0, first) == "0" && controllers.empty()) {
      v2_path = path;
      continue;
    }
    for (const auto& c : split(controllers, ','))
      v1_paths[c] = path;
  }

  cgroup_layout out;
  auto under = [](const std::string& mount_point, const std::string& mount_root,
                  const std::string& path) -> std::optional<std::string> {
    // The mount shows the hierarchy from mount_root down; our path must lie below it.
    if (mount_root == "/") return path == "/" ? mount_point : mount_point + path;
    if (path == mount_root) return mount_point;
    if (path.starts_with(mount_root + "/")) return mount_point + path.substr(mount_root.size());
    return std::nullopt;
  };
  for (const auto& line : split(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype source super
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash));
    std::istringstream tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point, fstype, source, super;
    head >> id >> parent >> dev >> root >> point;
    tail >> fstype >> source >> super;
    if (fstype == "cgroup2" && v2_path && !out.v2_dir) {
      out.v2_dir = under(point, root, *v2_path);
    } else if (fstype == "cgroup") {
      for (const auto& opt : split(super, ',')) {
        auto it = v1_paths.find(opt);
        if (it == v1_paths.end() || out.v1_dirs.count(opt)) continue;
        if (auto dir = under(point, root, it->second)) out.v1_dirs[opt] = *dir;
      }
    }
  }
  return out;
}

cgroup_layout read_cgroup_layout() {
  return parse_cgroup_layout(read_text("/proc/self/cgroup"), read_text("/proc/self/mountinfo"));
}

void jail_limits::setup(const limit_spec& spec, pid_t child, const cgroup_layout& layout,
                        const std::string& name) {
  struct wanted {
    resource r;
    const char* controller;
    bool requested;
  };
  const wanted all[] = {{resource::memory, "memory", spec.memory_bytes.has_value()},
                        {resource::cpu, "cpu", spec.cpu_millis.has_value()},
                        {resource::pids, "pids", spec.pids.has_value()}};
  auto& applied = applied_;

  auto write_limits_v2 = [&](const std::string& dir, resource r) {
    switch (r) {
      case resource::memory:
        if (!write_text(dir + "/memory.max", str_cat(*spec.memory_bytes))) return false;
        // No swap either, or the limit only slows the command down. Absent without swap.
        if (::access((dir + "/memory.swap.max").c_str(), F_OK) == 0)
          write_text(dir + "/memory.swap.max", "0");
        oom_file_ = dir + "/memory.events";
        return true;
      case resource::cpu:
        return write_text(dir + "/cpu.max", str_cat(*spec.cpu_millis * 100, " 100000"));
      case resource::pids:
        return write_text(dir + "/pids.max", str_cat(*spec.pids));
    }
    return false;
  };
  auto write_limits_v1 = [&](const std::string& dir, resource r) {
    switch (r) {
      case resource::memory:
        if (!write_text(dir + "/memory.limit_in_bytes", str_cat(*spec.memory_bytes))) return false;
        if (::access((dir + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0)
          write_text(dir + "/memory.memsw.limit_in_bytes", str_cat(*spec.memory_bytes));
        oom_file_ = dir + "/memory.oom_control";
        return true;
      case resource::cpu:
        return write_text(dir + "/cpu.cfs_period_us", "100000") &&
               write_text(dir + "/cpu.cfs_quota_us", str_cat(*spec.cpu_millis * 100));
      case resource::pids:
        return write_text(dir + "/pids.max", str_cat(*spec.pids));
    }
    return false;
  };

  // --- cgroup v2 -----------------------------------------------------------------------
  const std::optional<std::string> v2_parent =
      spec.cgroup_parent ? spec.cgroup_parent : layout.v2_dir;
  bool any_v2 = false;
  for (const auto& w : all)
    any_v2 = any_v2 || w.requested;
  if (v2_parent && any_v2) {
    std::string enabled = read_text(*v2_parent + "/cgroup.subtree_control");
    for (const auto& w : all) {
      if (w.requested && !has_word(enabled, w.controller)) {
        // Works in the root cgroup and in an empty delegated one; elsewhere the kernel's
        // "no internal processes" rule refuses it (EBUSY) and we fall back.
        write_text(*v2_parent + "/cgroup.subtree_control", str_cat('+', w.controller));
      }
    }
    enabled = read_text(*v2_parent + "/cgroup.subtree_control");
    bool usable = false;
    for (const auto& w : all)
      usable = usable || (w.requested && has_word(enabled, w.controller));
    if (usable) {
      if (auto dir = make_cgroup(*v2_parent, name)) {
        bool used = false;
        for (const auto& w : all) {
          if (w.requested && has_word(enabled, w.controller) && write_limits_v2(*dir, w.r)) {
            applied[static_cast<int>(w.r)] = mechanism::cgroup_v2;
            used = true;
          }
        }
        if (used && write_text(*dir + "/cgroup.procs", str_cat(child))) {
          created_.push_back(*dir);
        } else {
          for (auto& a : applied)
            a = mechanism::none;
          oom_file_.reset();
          ::rmdir(dir->c_str());
        }
      }
    }
  }

  // --- cgroup v1 -----------------------------------------------------------------------
  for (const auto& w : all) {
    if (!w.requested || applied[static_cast<int>(w.r)] != mechanism::none) continue;
    auto it = layout.v1_dirs.find(w.controller);
    if (it == layout.v1_dirs.end()) continue;
    auto dir = make_cgroup(it->second, name);
    if (!dir) continue;
    if (write_limits_v1(*dir, w.r) && write_text(*dir + "/cgroup.procs", str_cat(child))) {
      applied[static_cast<int>(w.r)] = mechanism::cgroup_v1;
      created_.push_back(*dir);
    } else {
      if (w.r == resource::memory) oom_file_.reset();
      ::rmdir(dir->c_str());
    }
  }

  // --- rlimits -------------------------------------------------------------------------
  for (const auto& w : all) {
    auto& a = applied[static_cast<int>(w.r)];
    if (!w.requested || a != mechanism::none) continue;
    if (w.r == resource::cpu && !cpu_seconds_for(spec)) continue;  // needs --timeout
    a = mechanism::rlimit;
  }
}

std::uint32_t jail_limits::rlimit_mask() const noexcept {
  std::uint32_t mask = 0;
  if (applied(resource::memory) == mechanism::rlimit) mask |= rlimit_memory;
  if (applied(resource::cpu) == mechanism::rlimit) mask |= rlimit_cpu;
  if (applied(resource::pids) == mechanism::rlimit) mask |= rlimit_pids;
  return mask;
}

std::string jail_limits::summary() const {
  return str_cat("memory=", to_string(applied(resource::memory)),
                 " cpu=", to_string(applied(resource::cpu)),
                 " pids=", to_string(applied(resource::pids)));
}

bool jail_limits::oom_killed() const {
  if (!oom_file_) return false;
  return counter(read_text(*oom_file_), "oom_kill") > 0;
}

void jail_limits::cleanup() noexcept {
  try {
    for (const auto& dir : created_) {
      // The jail's init has been reaped, and with it the whole PID namespace; the kernel may
      // still be finishing the last exits, so give rmdir a moment (bounded: 2 s).
      for (int attempt = 0; attempt < 200; ++attempt) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
        if (errno != EBUSY) {
          AIRLOCK_LOG(warn, "launcher", "rmdir(", dir, "): ", std::strerror(errno));
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    created_.clear();
  } catch (...) {
  }
}

std::optional<std::uint64_t> cpu_seconds_for(const limit_spec& spec) {
  if (!spec.cpu_millis || !spec.timeout) return std::nullopt;
  const std::uint64_t ms = static_cast<std::uint64_t>(spec.timeout->count());
  // CPU-milliseconds available over the wall time, rounded up to whole seconds (at least 1).
  const std::uint64_t cpu_ms = ms * *spec.cpu_millis / 1000;
  return std::max<std::uint64_t>(1, (cpu_ms + 999) / 1000);
}

bool apply_rlimits(const limit_spec& spec, std::uint32_t mask) {
  auto set = [](int which, const char* name, std::uint64_t value) {
    rlimit rl{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
    if (::setrlimit(which, &rl) != 0) return step_failed(str_cat("setrlimit(", name, ')'));
    return true;
  };
  if ((mask & rlimit_memory) && spec.memory_bytes &&
      !set(RLIMIT_AS, "RLIMIT_AS", *spec.memory_bytes))
    return false;
  if ((mask & rlimit_pids) && spec.pids && !set(RLIMIT_NPROC, "RLIMIT_NPROC", *spec.pids))
    return false;
  if (mask & rlimit_cpu) {
    if (auto secs = cpu_seconds_for(spec); secs && !set(RLIMIT_CPU, "RLIMIT_CPU", *secs))
      return false;
  }
  // No cgroup counterpart: always rlimits, soft and hard alike so that CMD cannot raise them.
  // Past --fsize a write fails with EFBIG after SIGXFSZ (setrlimit(2)); past --nofile,
  // open fails with EMFILE. Above the caller's own hard limit setrlimit fails (EPERM): an
  // error, not silently less.
  if (spec.fsize_bytes && !set(RLIMIT_FSIZE, "RLIMIT_FSIZE", *spec.fsize_bytes)) return false;
  if (spec.nofile && !set(RLIMIT_NOFILE, "RLIMIT_NOFILE", *spec.nofile)) return false;
  return true;
}

}  // namespace airlock::launcher
