#pragma once
// The policy decision as a filter: the agent's rules matched against the request's host, port,
// method, path and upgrade (policy::snapshot::decide). Sets the exchange's rule and whether
// report mode applies; a denial under report mode is reported, not refused.

#include "filters/filter.hpp"

namespace airlock::filters::decision {

class decision_factory final : public filter_factory {
 public:
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;
};

}  // namespace airlock::filters::decision
