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
    : rates_(std::move(rates)), agent_(agent), rule_(rule) {
  first_.refill = first.refill;
  first_.refill_params = first.refill_params;
  first_.refill_want = first.refill_want;
  first_.sync = first.sync;
  first_.sync_params = first.sync_params;
}

void lease_wait::start(std::function<void(verdict)> done) {
  done_ = std::move(done);
  admission a = std::move(first_);
  round(a);
}

void lease_wait::round(const admission& a) {
  shared_store* store = rates_->store();
  if (store == nullptr) {
    done_(verdict::refuse(core::errc::internal_error, "no shared store"));
    return;
  }
  ++rounds_;
  auto self = shared_from_this();
  if (a.sync) {
    store->sync_bytes(a.sync, a.sync_params, core::steady_now_ns(),
                      [self](bool ok) { self->answered(ok); });
    return;
  }
  store->acquire(a.refill, a.refill_params, a.refill_want, core::steady_now_ns(),
                 [self](std::int64_t granted, std::int64_t) { self->answered(granted >= 0); });
}

void lease_wait::answered(bool store_answered) {
  // Whatever came back is in the lease or the tally (or noted as empty): take again.
  admission a = rates_->take_tokens(agent_, rule_, core::steady_now_ns(), store_answered);
  if (a.must_wait()) {
    // Another exchange took the units first, or a second bucket is empty.
    if (rounds_ < 4) {
      round(a);
      return;
    }
    done_(verdict::refuse(core::errc::decision_timeout, "shared limits: no lease after 4 rounds"));
    return;
  }
  done_(a.admitted() ? verdict::next() : refusal_verdict(a));
}

}  // namespace airlock::filters::rate_limit
