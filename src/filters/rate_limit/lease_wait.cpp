#include "filters/rate_limit/lease_wait.hpp"

#include "core/steady_ns.hpp"

namespace airlock::filters::rate_limit {

verdict refusal_verdict(const admission& a) {
  const bool hard = a.error == core::errc::agent_stopped || a.error == core::errc::internal_error ||
                    a.error == core::errc::store_unavailable;
  auto v = hard ? verdict::refuse(a.error, a.limit) : verdict::violation(a.error, a.limit);
  v.retry_after = a.retry_after_seconds;
  return v;
}

lease_wait::lease_wait(std::shared_ptr<const plan> rates, std::size_t agent, std::size_t rule,
                       const admission& first)
    : rates_(std::move(rates)),
      agent_(agent),
      rule_(rule),
      lease_(first.refill),
      params_(first.refill_params),
      want_(first.refill_want) {}

void lease_wait::start(std::function<void(verdict)> done) {
  done_ = std::move(done);
  round(lease_, params_, want_);
}

void lease_wait::round(std::shared_ptr<lease> l, gcra_params p, std::uint32_t want) {
  shared_store* store = rates_->store();
  if (store == nullptr) {
    done_(verdict::refuse(core::errc::internal_error, "no shared store"));
    return;
  }
  ++rounds_;
  store->acquire(std::move(l), p, want, core::steady_now_ns(),
                 [self = shared_from_this()](std::int64_t granted, std::int64_t) {
                   // Whatever came back is in the lease (or noted as empty): take again.
                   admission a = self->rates_->take_tokens(self->agent_, self->rule_,
                                                           core::steady_now_ns(), granted >= 0);
                   if (a.must_wait()) {
                     // Another exchange took the units first, or a second bucket is empty.
                     if (self->rounds_ < 4) {
                       self->round(a.refill, a.refill_params, a.refill_want);
                       return;
                     }
                     self->done_(verdict::refuse(core::errc::decision_timeout,
                                                 "shared limits: no lease after 4 rounds"));
                     return;
                   }
                   self->done_(a.admitted() ? verdict::next() : refusal_verdict(a));
                 });
}

}  // namespace airlock::filters::rate_limit
