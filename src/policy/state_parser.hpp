#pragma once
// Private to the policy component: the `state:` section (policy/state.hpp), parsed with the
// same conventions as the rest of the file (known keys, types, file/line/key in every error).

#include "policy/error_sink.hpp"
#include "policy/state.hpp"

#include <string>

namespace YAML {
class Node;
}

namespace airlock::policy {

// base_dir: the policy file's folder, for a relative Unix socket path.
void parse_state(const YAML::Node& node, const std::string& path, const std::string& base_dir,
                 model::state_store& out, mark_table& marks, error_sink& errors);

// Checks that need the whole policy (the password's secret exists). Called after parsing.
void check_state(const model::policy& policy, const mark_table& marks, error_sink& errors);

}  // namespace airlock::policy
