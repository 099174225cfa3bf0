#pragma once
// From a policy snapshot to what engine::build takes: the policy's custom redactors (to pass as
// `custom` to resolve_redactors with a rule's `redact` names) and its secrets as literals (every
// secret is redacted from what comes back, whatever the rule says). The policy has already
// checked every pattern the way engine::build compiles it, so a snapshot that loaded builds.
//
// Header-only for now, so that adding it needs no change to sources.cmake.

#include "filters/redaction/redactor.hpp"
#include "policy/snapshot.hpp"

#include <string>
#include <vector>

namespace airlock::filters::redaction {

inline std::vector<redactor_spec> custom_redactors(const policy::snapshot& snapshot) {
  std::vector<redactor_spec> out;
  out.reserve(snapshot.redactors().size());
  for (const policy::compiled_redactor& r : snapshot.redactors())
    out.push_back(custom_redactor(r.name, r.pattern, r.replacement));
  return out;
}

// The engine keeps copies of the values: build it in the proxy process only, and keep it no
// longer than the snapshot it came from.
inline std::vector<literal_secret> literal_secrets(const policy::snapshot& snapshot) {
  std::vector<literal_secret> out;
  out.reserve(snapshot.secrets().size());
  for (const policy::compiled_secret& s : snapshot.secrets())
    out.push_back({s.name, std::string(s.value.reveal())});
  return out;
}

}  // namespace airlock::filters::redaction
