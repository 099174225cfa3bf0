#pragma once
// The overlay file of permanent approvals (approvals.overlay): a policy fragment the proxy
// writes to, which the operator's policy includes (`include:`); the operator's own file is
// never written. Each approval adds one rule (named approved-N: a host, a port, maybe a
// method) and its name to the agent's rules; the operator may edit the file to narrow or
// withdraw one. An approval never rewrites what is there (overlay_text.hpp): the rest of the
// file is kept byte for byte, or nothing is written.

#include "filters/approval/registry.hpp"

#include <string>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::approval {

struct overlay_change {
  std::string text;       // the whole new file
  std::string rule_name;  // the rule added
  std::string diff;       // "-"/"+" lines: what changed against the file as it was
  std::string error;      // not empty: nothing to write, and why
};

// The overlay with a rule allowing `r` (its method too when `same_method` and r is no
// CONNECT) added for r.agent. `old_text` is the file as it is now (empty when it does not
// exist); the new text keeps it byte for byte. `error` is set instead when the file cannot
// take the rule so (overlay_text.hpp), or `r`'s target was redacted by DLP.
overlay_change add_to_overlay(const policy::snapshot& current, const request_info& r,
                              bool same_method, const std::string& old_text);

// Replaces the file's contents atomically (a temporary file in the same folder, fsync,
// rename); false with `error` set when it cannot.
bool replace_file(const std::string& path, const std::string& text, std::string& error);
// The file's contents, or "" when it does not exist or cannot be read.
std::string read_file_or_empty(const std::string& path);

}  // namespace airlock::filters::approval
