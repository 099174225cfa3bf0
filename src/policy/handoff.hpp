#pragma once
// What `airlock run --policy FILE` takes from the proxy's policy for the process it confines:
// the files that hold secrets (and the CA key), to be hidden inside the jail, and each
// placeholder, handed over in the environment variable its secret is read from, so that a
// tool that insists on an API key starts and the proxy swaps the placeholder on the bound
// hosts.
//
// Works on a policy loaded without its secret values (load_options::read_secrets = false): the
// launcher never reads a secret.

#include "policy/snapshot.hpp"

#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {

struct agent_handoff {
  std::vector<std::string> hidden;                       // paths, as the policy resolves them
  std::vector<std::pair<std::string, std::string>> env;  // variable -> placeholder
};

agent_handoff handoff_for_agent(const snapshot& s);

}  // namespace airlock::policy
