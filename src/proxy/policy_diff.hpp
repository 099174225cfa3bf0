#pragma once
// What a reload changed, by name: rules and agents added, removed and modified, for the log
// line an operator reads after an edit ("rules added: x; agents modified: coder").

#include "policy/snapshot.hpp"

#include <string>

namespace airlock::proxy {

// "" when nothing named changed (e.g. only limits or comments did).
std::string describe_changes(const policy::snapshot& before, const policy::snapshot& after);

// The listen.* addresses of `next` that differ from those the process bound at start
// (`bound`), e.g. "listen.proxy 127.0.0.1:3128 -> 0.0.0.0:3128"; "" when none. Those read at
// start only: a reload cannot apply them. An address the command line overrode is left out.
std::string listen_changes(const policy::model::listen& bound, const policy::model::listen& next,
                           bool proxy_overridden, bool admin_overridden);

}  // namespace airlock::proxy
