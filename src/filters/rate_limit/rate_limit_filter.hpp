#pragma once
// Rate limits, quotas, concurrency caps, the circuit breaker and the kill switch as a filter.
// The admission (and with it any concurrency slot) is held for as long as the exchange lasts:
// for a CONNECT, the whole tunnel. A CONNECT is rated as a request; its tunnel holds its slots
// for one request inside at a time (plan::slots), and each request inside is rated too. When
// the exchange ends, a refusal or an upstream failure counts towards the agent's circuit
// breaker. The kill switch and the suspension are checked first by the agent gate.

#include "filters/filter.hpp"
#include "filters/rate_limit/plan.hpp"

#include <memory>

namespace airlock::filters::rate_limit {

class rate_limit_factory final : public filter_factory {
 public:
  explicit rate_limit_factory(std::shared_ptr<const plan> rates) : rates_(std::move(rates)) {}
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;
  const plan& rates() const noexcept { return *rates_; }

 private:
  std::shared_ptr<const plan> rates_;
};

}  // namespace airlock::filters::rate_limit
