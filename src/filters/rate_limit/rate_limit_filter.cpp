#include "filters/rate_limit/rate_limit_filter.hpp"

#include "policy/snapshot.hpp"

namespace airlock::filters::rate_limit {
namespace {

class rate_limit_filter final : public filter {
 public:
  rate_limit_filter(const plan& rates, std::size_t agent) : rates_(rates), agent_(agent) {}

  verdict on_request_head(exchange& ex) override {
    const std::size_t rule = rates_.rule_position(agent_, ex.rule);
    using slots = plan::slots;
    const slots use = ex.in_tunnel                     ? slots::skip
                      : ex.connect && ex.rule->inspect ? slots::only
                                                       : slots::take;
    admission_ = rates_.admit(agent_, rule, ex.clock(), use);
    ex.upload = byte_pace::for_exchange(rates_, agent_, rule, direction::upload);
    ex.download = byte_pace::for_exchange(rates_, agent_, rule, direction::download);
    if (admission_) return verdict::next();
    // The kill switch and an internal error hold even under report mode.
    const bool hard = admission_.error == core::errc::agent_stopped ||
                      admission_.error == core::errc::internal_error;
    auto v = hard ? verdict::refuse(admission_.error, admission_.limit)
                  : verdict::violation(admission_.error, admission_.limit);
    v.retry_after = admission_.retry_after_seconds;
    return v;
  }

  void on_end(exchange& ex) override {
    // The circuit breaker counts what the agent got wrong and what failed for it; not its own
    // suspension (which would keep it suspended) nor an operator's stop.
    const auto& rec = ex.record;
    if (rec.skipped) return;
    const auto decision = rec.decision();
    if ((decision == "deny" || decision == "error") && rec.reason != core::errc::agent_suspended &&
        rec.reason != core::errc::agent_stopped) {
      if (rates_.record_failure(agent_, ex.clock())) ex.breaker_tripped = true;
    }
  }

 private:
  const plan& rates_;
  std::size_t agent_;
  admission admission_;
};

}  // namespace

filter* rate_limit_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  return make<rate_limit_filter>(arena, *rates_, rates_->agent_index(*ex.agent));
}

}  // namespace airlock::filters::rate_limit
