#pragma once
// Reading a YAML mapping the way every policy section does: positions as 1-based line and
// column, and each entry's key checked (a string, not seen before: yaml-cpp keeps both entries
// of a duplicated key, and which one wins would be a guess) before the section looks at it.

#include "core/str_cat.hpp"
#include "policy/error_sink.hpp"
#include "policy/model.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

namespace airlock::policy {

// Line and column (1-based) of a node's mark; {} when yaml-cpp has none.
inline model::mark to_mark(const YAML::Mark& m) {
  if (m.is_null() || m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

// Calls f(name, key_node, value, child) for each entry of `map` in file order, where child is
// "path.name"; a key that is not a string or repeats an earlier one is reported to `errors`
// and skipped. What a name means (known, unknown) is the section's business.
template <class F>
void each_entry(const YAML::Node& map, const std::string& path, error_sink& errors, F&& f) {
  std::unordered_set<std::string> seen;  // a hash set: a mapping may have thousands of keys
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) {
      errors.add(to_mark(k.Mark()), path, "keys must be strings");
      continue;
    }
    const std::string& name = k.Scalar();
    const std::string child = core::str_cat(path, ".", name);
    if (!seen.insert(name).second) {
      errors.add(to_mark(k.Mark()), child, core::str_cat("duplicate key '", name, "'"));
      continue;
    }
    f(name, k, v, child);
  }
}

}  // namespace airlock::policy
