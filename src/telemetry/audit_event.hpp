#pragma once
// Audit records that are not an exchange: an operator's action on the admin port (approve,
// refuse, stop, resume, reload, or one refused for want of a token) and the life of a held
// request (held, timed out, its client gone, an agent's access request). They go to the same
// audit log, one JSON line each, told apart from exchange records by their `type` key
// (docs/operations.md, "Audit records of operators and approvals").
//
// Thread safety: pure functions.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::telemetry {

struct audit_event {
  std::chrono::system_clock::time_point time;
  std::string_view type;    // "operator" or "approval"
  std::string_view action;  // approve, refuse, stop, resume, reload; held, timed_out, ...
  std::string_view by;      // the operator (policy `operators:`), "local", or empty (the proxy)
  // The target: an approval's agent and request, or the agent stopped / resumed.
  std::string_view agent;
  std::string_view method;
  std::string_view host;
  std::uint16_t port = 0;
  std::string_view path;  // path only, never a query string
  std::uint64_t approval_id = 0;
  std::string_view scope;                        // an approval: once, agent_host, permanent
  std::optional<std::chrono::seconds> duration;  // an agent_host grant's duration
  std::string_view outcome;  // "ok", "not_found", "invalid", "failed", "unauthorized", ...
  std::string_view detail;   // a short human-readable reason (never a token)
  std::string_view client;   // the admin peer "ip:port" (operator records)
};

// Appends `e` as one JSON line (keys: time, type, action, by, agent, method, host, port, path,
// approval_id, scope, duration_s, outcome, detail, client; scope and duration_s are null when
// they do not apply). Invalid UTF-8 is replaced like in exchange records. May throw bad_alloc.
void append_event_line(std::string& out, const audit_event& e);

}  // namespace airlock::telemetry
