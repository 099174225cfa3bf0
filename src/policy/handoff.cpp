#include "policy/handoff.hpp"

namespace airlock::policy {

agent_handoff handoff_for_agent(const snapshot& s) {
  agent_handoff out;
  for (const auto& secret : s.secrets()) {
    if (secret.source == secret_source::file) {
      // A secret from a file has no variable of its own to carry its placeholder.
      out.hidden.push_back({secret.origin, "secret " + secret.name, true});
    } else if (!secret.placeholder.empty()) {
      out.env.emplace_back(secret.origin, secret.placeholder);
    } else {
      // No placeholder to hand over: the variable must not reach the agent at all.
      out.env_removed.push_back(secret.origin);
    }
  }
  if (!s.model().tls.ca_key.empty())
    out.hidden.push_back({s.model().tls.ca_key, "tls.ca_key", true});
  // The audit log records what the agent did and what was refused: not the agent's to read.
  const auto& audit = s.model().audit.path;
  if (!audit.empty() && audit != "-" && audit != "off") out.hidden.push_back({audit, "audit.path"});
  return out;
}

}  // namespace airlock::policy
