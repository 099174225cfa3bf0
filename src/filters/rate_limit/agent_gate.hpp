#pragma once
// The agent gate: the kill switch and the circuit breaker's suspension, checked before the
// decision. Run after it (as the rate limits are, which need the rule), a stopped or suspended
// agent got host_denied for a host no rule allows and agent_stopped for one a rule allows: an
// oracle of its allowlist for whatever runs as it. Refused here, every request gets the same
// answer. The rate-limit filter checks both again at its admission (a stop between the two).

#include "filters/filter.hpp"
#include "filters/rate_limit/plan.hpp"

#include <memory>

namespace airlock::filters::rate_limit {

class agent_gate_factory final : public filter_factory {
 public:
  explicit agent_gate_factory(std::shared_ptr<const plan> rates) : rates_(std::move(rates)) {}
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::shared_ptr<const plan> rates_;
};

}  // namespace airlock::filters::rate_limit
