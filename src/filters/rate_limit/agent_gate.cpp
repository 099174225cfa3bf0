#include "filters/rate_limit/agent_gate.hpp"

#include "filters/rate_limit/lease_wait.hpp"

namespace airlock::filters::rate_limit {
namespace {

class agent_gate final : public filter {
 public:
  agent_gate(const plan& rates, std::size_t agent) : rates_(rates), agent_(agent) {}

  verdict on_request_head(exchange& ex) override {
    const admission checked = rates_.check_agent(agent_, ex.clock());
    return checked.admitted() ? verdict::next() : refusal_verdict(checked);
  }

 private:
  const plan& rates_;  // the factory's, which outlives this filter
  std::size_t agent_;
};

}  // namespace

filter* agent_gate_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  return make<agent_gate>(arena, *rates_, rates_->agent_index(*ex.agent));
}

}  // namespace airlock::filters::rate_limit
