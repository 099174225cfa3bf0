#pragma once
// `airlock proxy` with `state: redis`: the store the replicas share (its client, its metrics).

#include "filters/rate_limit/shared_store.hpp"

#include <memory>

namespace airlock::policy {
class snapshot;
}
namespace airlock::telemetry {
class metrics;
}

namespace airlock::app {

// Null for `state: local`. The store connects in the background; until it is up,
// on_unavailable applies. Reports each mode to `metrics` (metrics::state_store), which must
// outlive the store.
std::unique_ptr<filters::rate_limit::shared_store> make_shared_store(const policy::snapshot& policy,
                                                                     telemetry::metrics& metrics);

}  // namespace airlock::app
