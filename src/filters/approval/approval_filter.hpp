#pragma once
// Held requests as a filter: a request the decision filter marked (exchange::hold_for: a rule's
// `ask`, or approvals.ask_unmatched) waits for an operator (verdict::wait with the registry's
// pending) unless a grant covers it: a timed grant in the registry, or a permanent approval,
// which is a rule of the overlay file (named "approved-...") the agent lists. Over the hold
// bounds it is refused at once (approval_limit, 429).
//
// @par Thread Safety
// The factory is immutable and shared; the registry is the proxy's (registry.hpp).

#include "filters/approval/registry.hpp"
#include "filters/filter.hpp"

#include <string>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::approval {

// Rule names the proxy writes to the overlay file start with this (overlay.hpp).
inline constexpr std::string_view approved_rule_prefix = "approved-";

class approval_factory final : public filter_factory {
 public:
  // `approvals` may be null (no registry: nothing is ever held, a marked request is refused).
  approval_factory(const policy::snapshot& snapshot, registry* approvals);
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

  registry* approvals() const noexcept { return registry_; }
  const bounds& limits() const noexcept { return bounds_; }
  // A permanent approval (an overlay rule the agent lists) covers the request.
  bool approved_for_good(const request_info& r) const;

 private:
  registry* registry_;
  bounds bounds_;
  std::vector<grant> permanent_;  // from the overlay's rules, never expiring
};

// The request as the registry sees it: its target as the exchange record shows it, so what DLP
// found there (the filter runs after DLP) reads [REDACTED:dlp] in every listing and record.
request_info describe(const exchange& ex);

}  // namespace airlock::filters::approval
