#pragma once
// What a reload changed, by name: rules and agents added, removed and modified, for the log
// line an operator reads after an edit ("rules added: x; agents modified: coder").

#include "policy/snapshot.hpp"

#include <string>

namespace airlock::proxy {

// "" when nothing named changed (e.g. only limits or comments did).
std::string describe_changes(const policy::snapshot& before, const policy::snapshot& after);

}  // namespace airlock::proxy
