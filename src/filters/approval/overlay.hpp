#pragma once
// The overlay file of permanent approvals (approvals.overlay): a policy fragment the proxy owns
// and rewrites, which the operator's policy includes (`include:`); the operator's own file is
// never written. It holds one rule per approval (named approved-N: a host, a port, maybe a
// method) and, per agent, the rule names added to that agent's rules. The text is rebuilt from
// the policy in force (its approved-* rules, in the agents that list them) plus the new one, so
// a hand edit of the overlay that loaded is kept.

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
};

// The overlay with a rule allowing `r` (its method too when `same_method` and r is no
// CONNECT) added for r.agent. `old_text` is the file as it is now (empty when it does not
// exist), for the diff.
overlay_change add_to_overlay(const policy::snapshot& current, const request_info& r,
                              bool same_method, const std::string& old_text);

// Replaces the file's contents atomically (a temporary file in the same folder, fsync,
// rename); false with `error` set when it cannot.
bool replace_file(const std::string& path, const std::string& text, std::string& error);
// The file's contents, or "" when it does not exist or cannot be read.
std::string read_file_or_empty(const std::string& path);

}  // namespace airlock::filters::approval
