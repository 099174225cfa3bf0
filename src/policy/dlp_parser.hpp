#pragma once
// Private to the policy component: the `dlp` and `blocklist` keys (dlp.hpp) from YAML, with
// errors carrying file, line and key like the rest of the parser.

#include "policy/dlp.hpp"
#include "policy/error_sink.hpp"

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace airlock::policy {

// `dlp: off`, `dlp: true` (the defaults), or a mapping of the keys in dlp.hpp.
void parse_dlp(const YAML::Node& node, const std::string& path, model::dlp_config& out,
               mark_table& marks, error_sink& errors);

// `blocklist: [name, "*.suffix", ...]`.
void parse_blocklist(const YAML::Node& node, const std::string& path,
                     std::vector<model::blocked_host>& out, error_sink& errors);

// After parsing: every name in a `dlp.classes` list is a built-in redactor, a custom one of
// `redactors:` or one of DLP's own classes (seed-phrase, high-entropy, nested-encoding).
void check_dlp_classes(const model::policy& p, const mark_table& marks, error_sink& errors);

}  // namespace airlock::policy
