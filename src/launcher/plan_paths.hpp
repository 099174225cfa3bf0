#pragma once
// Path rules of the plan (plan.hpp), kept apart so that each can be unit-tested and read on
// its own: which directories may be bound writable (the work directory, --home DIR), whether a
// path named on the command line follows a symlink a jailed run may have planted, and which
// directories hide the proxy's files. Pure functions: the host is reached only through
// host_facts' callbacks.

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

// A directory to be bound writable: the work directory or --home DIR.
struct writable_dir {
  std::string what;       // "the work directory", "--home"
  std::string given;      // as given
  std::string canonical;  // after realpath
  std::string advice;     // what to do instead, for the message
};

// Why d may not be bound writable, or "" when it may: the caller's home or one of its
// ancestors (dotfiles such as ~/.bashrc would be writable from the jail), or a directory that
// decides how the host boots, runs programs or authenticates (/etc, /usr, /lib*, the package
// databases under /var/lib, ...) or that holds other people's directories (/tmp, /srv, ...).
std::string writable_dir_refusal(const writable_dir& d, const host_facts& host);

// A directory a jailed run may have written, so may hold a symlink it planted.
struct jail_root {
  std::string what;  // "the work directory"
  std::string path;  // canonical
};

// A path named on the command line, checked against planted symlinks.
struct named_path {
  std::string what;   // "--rw", "--ro", "--workdir", "--home"
  std::string given;  // as given: relative to host.cwd, symlinks not followed
};

// Walks p's components as given (made absolute), resolving each prefix as the kernel would
// (".." goes up from where the prefix so far resolved). Returns an error naming the first
// component that is a symlink, sits in a directory that resolves inside one of `roots`, and
// leads outside that root; "" otherwise. Other spellings of the same place (a symlinked
// ancestor, /proc/self/cwd, "..") change nothing: only the links inside a root count.
// `checked`, when given, is set to the path the walk ended at (empty when a component is
// missing): what was checked, which the caller compares with the canonical path it binds.
std::string symlink_escape(const named_path& p, const std::vector<jail_root>& roots,
                           const host_facts& host, std::string* checked = nullptr);

// The error for a named path whose canonical path (bound) is not the one symlink_escape
// checked, `checked` (empty: the walk found a component missing): something on the way was
// swapped for a link, or back, in between. "" when they agree.
std::string changed_while_checked(const named_path& p, const std::string& canonical,
                                  const std::string& checked);

// What hiding a directory whole must not cover.
struct hide_context {
  // (what, canonical path) the jail exposes from the host: the work directory, --rw, --ro,
  // --home DIR. A secret whose directory is or holds one of them is refused.
  std::vector<std::pair<std::string, std::string>> binds;
  // (what, canonical path) the jail needs to see as it is on the host (the home, the trust
  // bundle's targets, resolv.conf): there only the file is hidden, and a secret is refused.
  std::vector<std::pair<std::string, std::string>> needed;
  // Canonical directories the jail has of its own (/tmp, /var/tmp, /run, /dev): the host's
  // are not seen there at all, so only the file is hidden and nothing is refused.
  std::vector<std::string> private_dirs;
};

// The paths that hide f's directory: the directory of the file as named and that of its
// canonical path (both, should a symlink lead elsewhere), each canonical, appended to out.
// Where such a directory is needed (hide_context, or a system directory such as /etc or
// /var), the file alone is hidden instead; for a required hide (a secret) that is an error
// (returned) unless the jail does not see the host's directory anyway.
std::string dir_of_hides(const hidden_dir_of& f, const hide_context& ctx, const host_facts& host,
                         std::vector<std::string>& out);

// The path to hide for `key` (canonical) so that a key rotated by rename stays hidden: its
// directory, or the key itself where that directory is needed (as for dir_of_hides).
std::string key_hide(const std::string& key, const hide_context& ctx);

}  // namespace airlock::launcher
