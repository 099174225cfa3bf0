#pragma once
// The proxy's own endpoint for agents: http://airlock.internal/request-access, answered by the
// proxy itself and never resolved or forwarded (a CONNECT to the name, or the name inside a
// tunnel, is refused). A confined agent can reach it only through the proxy, as the proxy
// identifies it (the launcher's relay names the agent).
//
//   POST /request-access  {"host": "api.example.com", "port": 443, "reason": "..."}
//        -> 202 {"id": N, "outcome": "pending", "poll":
//        "http://airlock.internal/request-access?id=N"}
//   GET  /request-access?id=N  -> 200 {"id": N, "outcome": "pending" | "approved" | "refused" |
//                                      "timed_out"}   (404 for another agent's id)
//
// An access request is a pending approval (registry::ask) within the hold bounds; approving
// it grants the agent that host and port. Its reason is the agent's own words: at most 1 KiB
// of valid UTF-8 (the JSON parser checks it), stored raw, escaped wherever it is shown.
// Off unless approvals.access_requests (then every request to the name is answered 404).

#include "filters/approval/registry.hpp"
#include "filters/filter.hpp"

#include <chrono>
#include <string_view>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::approval {

inline constexpr std::string_view reserved_host = "airlock.internal";

class access_factory final : public filter_factory {
 public:
  access_factory(const policy::snapshot& snapshot, registry* approvals);
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

  registry* approvals() const noexcept { return enabled_ ? registry_ : nullptr; }
  const bounds& limits() const noexcept { return bounds_; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }

 private:
  registry* registry_;
  bool enabled_ = false;
  bounds bounds_;
  std::chrono::milliseconds timeout_{0};
};

}  // namespace airlock::filters::approval
