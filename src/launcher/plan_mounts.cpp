// build_plan's mount steps (plan_builder.hpp), and how a mount step is described (--verbose).
#include "core/str_cat.hpp"
#include "launcher/plan_builder.hpp"

#include <algorithm>

namespace airlock::launcher {

using core::str_cat;

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
      return str_cat("hide ", s.target,
                     s.make_point ? " (made in the home layer: not there yet)" : "");
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

namespace plan_detail {

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
    s.make_point = h.missing;
    p.hidden.push_back(h.path);
  }
  add(mount_kind::remount_ro, "/run");
  add(mount_kind::remount_ro, "/dev");
  add(mount_kind::pivot_root, "/");
  return {};
}

}  // namespace plan_detail
}  // namespace airlock::launcher
