// The mount steps that bring host paths and staged files into the jail (mount_steps.hpp):
// binds, hides, resolv.conf and the trust files.
//
// The plan checked canonical paths (no symlink in them) before the jail existed; mount(2) given
// a path would resolve it again now, following whatever links were put there since. So each
// source and each mount point is opened once without following a link (path_walk.hpp), checked
// on that descriptor, and mounted through /proc/self/fd/N (mount(2) resolves the magic link to
// exactly the opened file, as runc does): a checked directory swapped for a link before the
// open is refused, one swapped after it changes nothing. open_tree(2) + move_mount(2) would do
// the same without /proc from Linux 5.2; the /proc path works on every kernel we run on.
#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "launcher/mount_steps.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace airlock::launcher::mount_detail {
namespace {

using core::str_cat;

// The root of the mount just made on `at`, as "/proc/self/fd/N" for mount_setattr(2) and
// remounts: at's own descriptor still names the directory below the new mount (a magic link
// does not cross onto mounts), while a lookup of its name crosses onto the mount. That it is
// `want`'s inode (the bind's source) shows the name was not swapped meanwhile.
struct mounted_root {
  path_fd fd;
  std::string via;
};
mounted_root root_of(const mount_context& ctx, const opened_path& at, const std::string& target,
                     const struct stat& want) {
  path_fd fd(::openat(at.dir.get(), at.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    step_failed(str_cat("open(", target, ')'));
    return {};
  }
  if (st.st_dev != want.st_dev || st.st_ino != want.st_ino) {
    step_failed_msg(
        str_cat("mount point ", target, ": replaced while it was mounted on; refusing to go on"));
    return {};
  }
  std::string via = fd_path(proc_root(ctx), fd.get());
  return {std::move(fd), std::move(via)};
}

// A staged file of the launcher's own bound read-only over `at`.
bool bind_staged_file(const mount_context& ctx, const std::string& source, const opened_path& at,
                      const std::string& target) {
  struct stat st;
  if (::stat(source.c_str(), &st) != 0) return step_failed(str_cat("stat(", source, ')'));
  if (!mount_on(ctx, at, target, source.c_str(), nullptr, MS_BIND, nullptr)) return false;
  const auto root = root_of(ctx, at, target, st);
  return root.fd && make_read_only(join(ctx.staging_root, target), false, root.via);
}

}  // namespace

std::string proc_root(const mount_context& ctx) {
  return str_cat(ctx.host_root, "/proc");
}

// The mount point of a step: `target` (as the jail sees it) below the staging root, made
// where missing, no symlink on the way followed (path_walk.hpp). Below a writable bind (the
// work directory, --rw, --home DIR) a link could otherwise move the mount elsewhere, or make
// mkdir or open(O_CREAT) write on the host through it.
opened_path mount_point(const mount_context& ctx, const std::string& target, bool is_dir) {
  auto at = open_no_symlinks(ctx.staging_root, target, {.create = true, .is_dir = is_dir});
  if (!at) step_failed_msg(str_cat("mount point ", target, ": ", last_step_error()));
  return at;
}

// mount(2); a failure names `shown_source` and `shown_target` (the plan's paths) where given
// rather than the /proc/self/fd paths the call was made with.
bool do_mount(const char* source, const std::string& target, const char* type, unsigned long flags,
              const char* data, std::string_view shown_source, std::string_view shown_target) {
  if (::mount(source, target.c_str(), type, flags, data) != 0) {
    std::string_view src = source ? std::string_view(source) : std::string_view("none");
    return step_failed(str_cat("mount(", shown_source.empty() ? src : shown_source, ", ",
                               shown_target.empty() ? std::string_view(target) : shown_target, ", ",
                               type ? type : "bind", ')'));
  }
  return true;
}

// mount(2) onto the opened mount point: through /proc/self/fd, which the kernel resolves to the
// opened directory or file itself, never by its path again.
bool mount_on(const mount_context& ctx, const opened_path& at, const std::string& target,
              const char* source, const char* type, unsigned long flags, const char* data,
              std::string_view shown_source) {
  return do_mount(source, fd_path(proc_root(ctx), at.fd.get()), type, flags, data, shown_source,
                  target);
}

// Binds `source` below source_root (the host's root, or the staging tmpfs) at `target`. Both
// are opened once without following symlinks and mounted by descriptor (path_walk.hpp), so a
// checked directory swapped for a link before this point is refused, and one swapped after it
// changes nothing: what is bound is the inode that was opened, checked and mounted.
bool step_bind(const mount_context& ctx, const std::string& source_root, const std::string& source,
               const mount_step& s) {
  const auto src = open_no_symlinks(source_root, source);
  if (!src) return step_failed_msg(str_cat("bind source ", source, ": ", last_step_error()));
  struct stat st;
  if (::fstat(src.fd.get(), &st) != 0) return step_failed(str_cat("fstat(", source, ')'));
  if (S_ISDIR(st.st_mode) != s.is_dir) {
    return step_failed_msg(str_cat("bind source ", source, ": no longer a ",
                                   s.is_dir ? "directory" : "file",
                                   " (it changed after the check)"));
  }
  const auto at = mount_point(ctx, s.target, s.is_dir);
  if (!at || !mount_on(ctx, at, s.target, fd_path(proc_root(ctx), src.fd.get()).c_str(), nullptr,
                       MS_BIND | MS_REC, nullptr, source))
    return false;
  const auto root = root_of(ctx, at, s.target, st);
  if (!root.fd) return false;
  const std::string shown = join(ctx.staging_root, s.target);
  return s.writable ? make_nosuid(shown, root.via) : make_read_only(shown, true, root.via);
}

// The mount point of a hide whose path did not exist when the plan was made (plan.hpp,
// mount_step::make_point): made in the home's private layer, which the plan checked the path
// is in. The first directory made on the way (~/.config for ~/.config/gh) is bound onto itself:
// the jail may write in it, but a mount point cannot be renamed or removed (rename(2), EBUSY),
// so the covered name stays where it is. (Renamed away, a directory made in the layer would
// leave no whiteout, and the host's later ~/.config would show through at its name.)
enum class hide_point { ready, not_made, no_layer, failed };
hide_point make_hide_point(const mount_step& s, const mount_context& ctx) {
  std::string first_made;
  for (std::size_t slash = s.target.find('/', 1); first_made.empty();
       slash = s.target.find('/', slash + 1)) {
    const std::string prefix = s.target.substr(0, slash);
    if (!open_no_symlinks(ctx.staging_root, prefix)) {
      if (errno != ENOENT) {
        // A link (a dangling one: the plan found nothing there) or a file on the way: nothing
        // is made through it (docs/launcher.md, Known limits).
        AIRLOCK_LOG(debug, "launcher", "hide ", s.target, ": not made: ", last_step_error());
        return hide_point::not_made;
      }
      first_made = prefix;
    }
    if (slash == std::string::npos) break;
  }
  if (first_made.empty()) return hide_point::ready;  // made on the host since the plan
  const auto at =
      open_no_symlinks(ctx.staging_root, s.target, {.create = true, .is_dir = s.is_dir});
  if (!at) {
    // No layer (the kernel refused the overlay): the home is the read-only root.
    if (errno == EROFS) return hide_point::no_layer;
    step_failed_msg(str_cat("hide ", s.target, ": ", last_step_error()));
    return hide_point::failed;
  }
  if (first_made == s.target) return hide_point::ready;  // the cover itself pins it
  const auto pin = open_no_symlinks(ctx.staging_root, first_made);
  const bool pinned =
      pin && mount_on(ctx, pin, first_made, fd_path(proc_root(ctx), pin.fd.get()).c_str(), nullptr,
                      MS_BIND, nullptr, first_made);
  return pinned ? hide_point::ready : hide_point::failed;
}

// The cover goes on the path opened without following a link on the way (path_walk.hpp): a
// directory of it swapped for a link (below a writable bind) is refused, not followed.
bool step_hide(const mount_step& s, const mount_context& ctx, mount_outcome* outcome) {
  if (s.make_point) {
    switch (make_hide_point(s, ctx)) {
      case hide_point::ready:
        break;
      case hide_point::not_made:
        return true;
      case hide_point::no_layer:
        if (outcome) outcome->uncovered.push_back(s.target);
        return true;
      case hide_point::failed:
        return false;
    }
  }
  const auto at = open_no_symlinks(ctx.staging_root, s.target, {.last_may_be_link = true});
  if (!at) {
    // Not visible from inside (not bound, or below a directory we cannot enter ourselves):
    // nothing to cover.
    if (s.optional && (errno == ENOENT || errno == EACCES || errno == ENOTDIR)) return true;
    return step_failed_msg(str_cat("hide ", s.target, ": ", last_step_error()));
  }
  struct stat st;
  if (::fstat(at.fd.get(), &st) != 0) return step_failed(str_cat("fstat(", s.target, ')'));
  if (S_ISDIR(st.st_mode)) {
    // Empty, read-only, and mode 000: reading it fails with EACCES for a process without
    // CAP_DAC_OVERRIDE, which the command does not have.
    return mount_on(ctx, at, s.target, "tmpfs", "tmpfs",
                    MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=000,size=4k,nr_inodes=2");
  }
  if (S_ISLNK(st.st_mode)) return true;  // canonical paths never name a link; be safe anyway
  // A mode-000 file over it: open() fails with EACCES rather than reading empty.
  struct stat masked;
  if (::stat(ctx.masked_file.c_str(), &masked) != 0)
    return step_failed(str_cat("stat(", ctx.masked_file, ')'));
  if (!mount_on(ctx, at, s.target, ctx.masked_file.c_str(), nullptr, MS_BIND, nullptr))
    return false;
  const auto root = root_of(ctx, at, s.target, masked);
  return root.fd && make_read_only(join(ctx.staging_root, s.target), false, root.via);
}

bool step_resolv_conf(const mount_step& s, const mount_context& ctx) {
  if (ctx.resolv_file.empty()) return true;  // no resolver after all (capture unavailable)
  // Where the file cannot be (a read-only directory without it), glibc falls back to
  // 127.0.0.1 by itself, which is where the resolver listens.
  const auto at = mount_point(ctx, s.target, false);
  if (!at) {
    if (s.optional && errno != ELOOP) {
      AIRLOCK_LOG(debug, "launcher", "no resolv.conf at ", s.target, ": ", last_step_error());
      return true;
    }
    return false;
  }
  return bind_staged_file(ctx, ctx.resolv_file, at, s.target);
}

// A staged trust file bound over a system path (the CA bundle, the JVM's cacerts). Skipped
// when the launcher did not make it (no keytool store) or the path is not there.
bool step_trust_file(const mount_step& s, const mount_context& ctx) {
  const std::string source = str_cat(ctx.trust_dir, '/', s.source);
  struct stat st;
  if (::lstat(source.c_str(), &st) != 0) return true;
  const auto at = open_no_symlinks(ctx.staging_root, s.target);
  if (!at) return errno == ENOENT || step_failed_msg(str_cat(s.target, ": ", last_step_error()));
  return bind_staged_file(ctx, source, at, s.target);
}

}  // namespace airlock::launcher::mount_detail
