#pragma once
// The filters of one policy snapshot, in chain order, built once per load. This is the one
// place that knows which controls exist and in which order they run; the session only drives
// the chain. Adding a control: its folder under src/filters/, a factory, a line in
// pipeline.cpp.
//
// Order (a refusal by an earlier filter wins over a later one):
//   placeholders  a secret's placeholder sent to a host the secret is not bound to (any rule)
//   decision      the policy's rules: host, port, method, path, upgrade, inspection
//   rate_limit    kill switch, breaker, concurrency, quotas, token buckets; byte paces
//   approval      a request marked `ask` held for an operator (a wait), unless granted
//   require       placeholders a rule insists on
//   validation    query, headers, body size, JSON body
//   mcp           JSON-RPC methods, MCP tools and their arguments (answered as JSON-RPC)
//   dlp           blocklist, data-like hosts, secrets and sensitive data in the request
//   injection     placeholders swapped for values, the rule's credentials added
//   redaction     response headers and bodies (runs first on the way back)
//
// @par Thread Safety
// Immutable after build(); shared by every worker.

#include "filters/filter.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters {

namespace rate_limit {
class registry;
class plan;
}  // namespace rate_limit
namespace approval {
class registry;
}
namespace redaction {
class retired_secrets;
}

// State that outlives snapshots (bucket levels, breakers, the kill switch): kept by the server
// and bound to each new snapshot.
struct lasting_state {
  rate_limit::registry* rates = nullptr;
  approval::registry* approvals = nullptr;        // held requests and grants; null: nothing is held
  redaction::retired_secrets* retired = nullptr;  // rotated-out values; null: none kept
};

class pipeline {
 public:
  pipeline() = default;  // use build()
  struct build_result;
  // Builds every filter's factory for `snapshot`; fails (errors set, nothing built) when one
  // cannot be built, and the policy is then refused like one that does not load.
  static build_result build(std::shared_ptr<const policy::snapshot> snapshot, lasting_state& state);

  const policy::snapshot& snapshot() const noexcept { return *snapshot_; }
  const std::shared_ptr<const policy::snapshot>& snapshot_ptr() const noexcept { return snapshot_; }
  std::span<const std::unique_ptr<filter_factory>> factories() const noexcept { return factories_; }

 private:
  std::shared_ptr<const policy::snapshot> snapshot_;
  std::vector<std::unique_ptr<filter_factory>> factories_;
};

struct pipeline::build_result {
  std::shared_ptr<const pipeline> built;  // null when errors is not empty
  std::vector<std::string> errors;        // names, never values
};

}  // namespace airlock::filters
