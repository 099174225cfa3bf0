#pragma once
// Path rules of the plan (plan.hpp), kept apart so that each can be unit-tested and read on
// its own: which directories may be the writable work directory, and whether a --rw/--ro path
// named inside the work directory still lands there once symlinks are followed. Pure
// functions: the host is reached only through host_facts' callbacks.

#include "launcher/plan.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::launcher {

// path made absolute against cwd (not normalised, symlinks not followed).
std::string absolute_path(const std::string& path, const std::string& cwd);

// True when path is dir or lies below it (both absolute, compared as strings).
bool is_within(std::string_view path, std::string_view dir);

// The directory that holds path ("/" for "/x").
std::string parent_dir(const std::string& path);

// Why the canonical directory `dir` may not be the writable work directory, or "" when it may:
// the caller's home or one of its ancestors (dotfiles such as ~/.bashrc would be writable from
// the jail), or a system directory (/etc, /usr, /var/lib, ...). `raw` is the directory as given.
std::string workdir_refusal(const std::string& raw, const std::string& dir, const host_facts& host);

// For a --rw/--ro path as given (`given`, absolute, symlinks not followed) that lies inside
// the work directory (`workdir_given` as given, or `workdir` canonical): "" when its canonical
// path `canon` is inside the canonical work directory too; otherwise an error naming the
// symlink that leads out (a jailed run may have planted it for the next run to follow).
std::string symlink_escape(const std::string& what, const std::string& given,
                           const std::string& canon, const std::string& workdir_given,
                           const std::string& workdir, const host_facts& host);

// The paths that hide f's directory: the directory of the file as named and that of its
// canonical path (both, should a symlink lead elsewhere), each canonical, appended to out.
// Where such a directory is or holds one of `binds` (what, canonical path), hiding it would
// hide what the jail needs: a required hide (a secret) is then an error (returned), any other
// falls back to the file itself.
std::string dir_of_hides(const hidden_dir_of& f,
                         const std::vector<std::pair<std::string, std::string>>& binds,
                         const host_facts& host, std::vector<std::string>& out);

}  // namespace airlock::launcher
