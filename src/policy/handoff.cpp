#include "policy/handoff.hpp"

namespace airlock::policy {

agent_handoff handoff_for_agent(const snapshot& s) {
  agent_handoff out;
  for (const auto& secret : s.secrets()) {
    if (secret.source == secret_source::file) {
      out.hidden.push_back(secret.origin);
    } else if (!secret.placeholder.empty()) {
      // A secret from a file has no variable of its own to carry its placeholder.
      out.env.emplace_back(secret.origin, secret.placeholder);
    }
  }
  if (!s.model().tls.ca_key.empty()) out.hidden.push_back(s.model().tls.ca_key);
  return out;
}

}  // namespace airlock::policy
