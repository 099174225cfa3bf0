#pragma once
// What `airlock run --policy FILE` takes from the proxy's policy for the process it confines:
// the files that hold secrets (and the CA key), whose directories are hidden inside the jail;
// the proxy's other files (the audit log), hidden by directory where that is possible; the
// environment variables that secrets are read from, each handed over as its placeholder or
// removed; so that a tool that insists on an API key starts and the proxy swaps the placeholder
// on the bound hosts, and no secret reaches the agent.
//
// Works on a policy loaded without its secret values (load_options::read_secrets = false): the
// launcher never reads a secret.

#include "policy/snapshot.hpp"

#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {

// A file of the proxy that the jail must not read, now or after it is replaced.
struct hidden_file {
  std::string path;  // as the policy resolves it
  std::string why;   // for messages: "secret filesec", "tls.ca_key", "audit.path"
  // A secret: its whole directory must be hidden (a file replaced by rename, the documented
  // rotation, would otherwise be visible), and the launcher refuses to run when that
  // directory holds the work directory. Otherwise the file alone is hidden in that case.
  bool secret = false;
};

struct agent_handoff {
  std::vector<hidden_file> hidden;
  std::vector<std::pair<std::string, std::string>> env;  // variable -> placeholder
  std::vector<std::string> env_removed;                  // secret variables without a placeholder
};

agent_handoff handoff_for_agent(const snapshot& s);

}  // namespace airlock::policy
