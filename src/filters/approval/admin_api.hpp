#pragma once
// The admin port's POST /approvals/<id>/approve|refuse, read into a registry decision: the id,
// and a JSON body {"scope": "once" | "agent_host" | "permanent", "duration": "1h", "method":
// true, "path_prefix": "/v1/"} (every key optional: once; 1h; any method; any path).

#include "filters/approval/registry.hpp"

#include <string>
#include <string_view>

namespace airlock::filters::approval {

// Reads the body into `d` (its scope, duration, method and path_prefix); false with `error`.
bool read_decision(std::string_view body, decision& d, std::string& error);

// Applies the decision; returns the HTTP status of the answer (200; 400 for a bad body; 404
// for no such pending approval; 409 when a permanent approval could not be written or loaded)
// with `message` its body.
// `out`, when given, receives the decision read from the body and the request it was applied
// to (empty when there was no such pending approval), for the audit trail.
struct admin_decision {
  std::uint64_t id = 0;
  decision d;
  request_info target;
};
unsigned decide_from_admin(registry& approvals, std::string_view id, bool approve,
                           std::string_view body, std::string by, std::string& message,
                           admin_decision* out = nullptr);

}  // namespace airlock::filters::approval
