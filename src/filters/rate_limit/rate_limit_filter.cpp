#include "filters/rate_limit/rate_limit_filter.hpp"

#include "core/str_cat.hpp"
#include "filters/rate_limit/lease_wait.hpp"
#include "policy/snapshot.hpp"

namespace airlock::filters::rate_limit {
namespace {

// A request inside a tunnel is in the CONNECT's slots, one at a time (plan::slots): an HTTP/2
// stream that begins beside others in flight takes its own, and a request that another rule
// allowed takes that rule's.
plan::slots slots_for(const exchange& ex) {
  if (!ex.in_tunnel) return {};
  const bool beside = ex.streams_alongside > 0;
  const bool other_rule = ex.rule == nullptr || ex.rule->name != ex.tunnel_rule;
  return {.agent = beside, .rule = beside || other_rule};
}

class rate_limit_filter final : public filter {
 public:
  rate_limit_filter(const std::shared_ptr<const plan>& rates, std::size_t agent)
      : rates_ptr_(rates), rates_(*rates), agent_(agent) {}

  verdict on_request_head(exchange& ex) override {
    const std::size_t rule = rates_.rule_position(agent_, ex.rule);
    admission_ = rates_.admit(agent_, rule, ex.clock(), slots_for(ex));
    ex.upload = byte_pace::for_exchange(rates_, agent_, rule, direction::upload);
    ex.download = byte_pace::for_exchange(rates_, agent_, rule, direction::download);
    if (admission_) return verdict::next();
    // A shared limit whose lease is empty (state: redis): the slots stay with this admission,
    // the units come with the wait.
    if (admission_.must_wait()) {
      auto wait = std::make_shared<lease_wait>(rates_ptr_, agent_, rule, admission_);
      admission_.refill.reset();
      admission_.sync.reset();
      return verdict::wait(std::move(wait));
    }
    return refusal_verdict(admission_);
  }

  // WebSocket messages from the agent, under the rule's `websocket.messages_per_minute`: a
  // GCRA bucket of this connection's own (the same algorithm as the request buckets; one
  // upgraded connection is one exchange, so the bucket lives as long as it does).
  verdict on_message(exchange& ex, const message& m) override {
    if (m.from != message_from::client || !m.data() || ex.rule == nullptr ||
        ex.rule->source == nullptr)
      return verdict::next();
    const auto& ws = ex.rule->source->websocket;
    if (ws.messages_per_minute == 0) return verdict::next();
    if (!messages_.enabled())
      messages_ = gcra_params::requests(ws.messages_per_minute, 60 * ns_per_second, ws.burst);
    const auto got = message_bucket_.try_acquire(messages_, ex.clock());
    if (got.allowed) return verdict::next();
    auto v = verdict::violation(
        core::errc::rate_limited,
        core::str_cat("rule ", ex.rule->name,
                      " websocket messages_per_minute=", ws.messages_per_minute));
    v.retry_after = seconds_ceil(got.retry_after_ns);
    return v;
  }

  // The `concurrent` slots go back before the answer's last byte reaches the client: one that
  // asks again at once, on another connection, must find them free.
  void on_answered(exchange&) override {
    admission_.agent_slot.reset();
    admission_.rule_slot.reset();
  }

  void on_end(exchange& ex) override {
    // The circuit breaker counts what the agent got wrong and what failed for it; not its own
    // suspension (which would keep it suspended) nor an operator's stop.
    const auto& rec = ex.record;
    if (rec.skipped) return;
    const auto decision = rec.decision();
    if ((decision == "deny" || decision == "error") && rec.reason != core::errc::agent_suspended &&
        rec.reason != core::errc::agent_stopped) {
      if (rates_.record_failure(agent_, ex.clock())) {
        ex.breaker_tripped = true;
        // state: redis: the other replicas suspend the agent too.
        if (shared_store* store = rates_.store())
          store->publish_trip(rates_.agent_name(agent_),
                              rates_.agents()[agent_].breaker.cooldown_ns);
      }
    }
  }

 private:
  const std::shared_ptr<const plan>& rates_ptr_;  // the factory's, which outlives this filter
  const plan& rates_;
  std::size_t agent_;
  admission admission_;
  gcra_params messages_;  // set at the first WebSocket message
  gcra message_bucket_;
};

}  // namespace

filter* rate_limit_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  return make<rate_limit_filter>(arena, rates_, rates_->agent_index(*ex.agent));
}

}  // namespace airlock::filters::rate_limit
