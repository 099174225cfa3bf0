#pragma once
// Internal to apply_mounts (mounts.cpp, mount_binds.cpp): the steps that put host paths and
// staged files into the jail, each source and mount point opened without following symlinks
// and mounted by descriptor (path_walk.hpp), and the helpers the other steps share.

#include "launcher/mounts.hpp"
#include "launcher/path_walk.hpp"

#include <string>
#include <string_view>

namespace airlock::launcher::mount_detail {

// root + path, for a path as the jail sees it ("/" is root itself).
inline std::string join(const std::string& root, const std::string& path) {
  return path == "/" ? root : root + path;
}

// The host's proc while the jail is assembled (below the staging tmpfs): its /self/fd links
// name our descriptors (fd_path).
std::string proc_root(const mount_context& ctx);

// The mount point of a step: `target` (as the jail sees it) below the staging root, made where
// missing, no symlink on the way followed. Empty (the failure recorded, errno kept) otherwise.
opened_path mount_point(const mount_context& ctx, const std::string& target, bool is_dir);

// mount(2); a failure names `shown_source` and `shown_target` (the plan's paths) where given
// rather than the /proc/self/fd paths the call was made with.
bool do_mount(const char* source, const std::string& target, const char* type, unsigned long flags,
              const char* data, std::string_view shown_source = {},
              std::string_view shown_target = {});

// mount(2) onto the opened mount point `at` (target names it in messages).
bool mount_on(const mount_context& ctx, const opened_path& at, const std::string& target,
              const char* source, const char* type, unsigned long flags, const char* data,
              std::string_view shown_source = {});

// bind: s.source below source_root (the host's root, or "/" for the staging tmpfs's own).
bool step_bind(const mount_context& ctx, const std::string& source_root, const std::string& source,
               const mount_step& s);
// A path not there yet (make_point) that cannot be covered is added to outcome->uncovered.
bool step_hide(const mount_step& s, const mount_context& ctx, mount_outcome* outcome);
bool step_resolv_conf(const mount_step& s, const mount_context& ctx);
bool step_trust_file(const mount_step& s, const mount_context& ctx);

}  // namespace airlock::launcher::mount_detail
