#include "filters/rate_limit/plan.hpp"

#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace airlock::filters::rate_limit {
namespace {

using core::errc;

// Who a limit belongs to, for the refusal's detail.
std::string subject(const plan::agent_entry& a, const plan::rule_entry* r) {
  if (r == nullptr) return core::str_cat("agent ", a.name);
  return core::str_cat("rule ", r->name, " (agent ", a.name, ")");
}

// What admit() has taken so far, so that a refusal can give it back.
struct taken {
  gcra* buckets[4] = {};
  const gcra_params* params[4] = {};
  int count = 0;
  void add(gcra& g, const gcra_params& p) noexcept {
    buckets[count] = &g;
    params[count] = &p;
    ++count;
  }
  void give_back() noexcept {
    for (int i = 0; i < count; ++i)
      buckets[i]->refund(*params[i]);
    count = 0;
  }
};

// Fills in a refusal and frees what was taken; moves `a` out (refusals are the slow path).
admission refuse(admission& a, taken& t, errc why, std::int64_t retry_ns, std::string limit) {
  t.give_back();
  a.agent_slot.reset();
  a.rule_slot.reset();
  a.error = why;
  a.retry_after_ns = std::max<std::int64_t>(retry_ns, 0);
  a.retry_after_seconds = seconds_ceil(a.retry_after_ns);
  a.limit = std::move(limit);
  return std::move(a);
}

}  // namespace

plan::plan(std::vector<agent_entry> agents, std::shared_ptr<const void> keep_alive,
           const policy::snapshot* snapshot)
    : agents_(std::move(agents)), keep_alive_(std::move(keep_alive)), snapshot_(snapshot) {
  for (const auto& a : agents_) {
    if (a.limits.any) limits_anything_ = true;
    for (const auto& r : a.rules)
      if (r.state && r.limits.any) limits_anything_ = true;
  }
}

admission plan::admit(std::size_t agent_index, std::size_t rule_position, std::int64_t now_ns,
                      slots concurrency) const {
  admission a;
  taken t;
  if (agent_index >= agents_.size())
    return refuse(a, t, errc::internal_error, 0, "agent not in the rate plan");
  const agent_entry& ag = agents_[agent_index];
  agent_state& st = *ag.state;

  if (st.breaker.stopped())
    return refuse(a, t, errc::agent_stopped, 0, core::str_cat("agent ", ag.name, " stopped"));
  if (ag.breaker.enabled()) {
    if (const std::int64_t until = st.breaker.check(now_ns); until != 0)
      return refuse(
          a, t, errc::agent_suspended, time_between(now_ns, until),
          core::str_cat("agent ", ag.name, " breaker max_failures=", ag.breaker.max_failures));
  }

  const rule_entry* re = nullptr;
  if (rule_position != no_rule) {
    if (rule_position >= ag.rules.size())
      return refuse(a, t, errc::internal_error, 0,
                    core::str_cat("agent ", ag.name, " has no rule at ", rule_position));
    if (ag.rules[rule_position].state && ag.rules[rule_position].limits.any)
      re = &ag.rules[rule_position];
  }
  // No limits for this agent on this rule: the common case costs the two loads above.
  if (!ag.limits.any && re == nullptr) return a;

  const rate_limits& al = ag.limits;
  bucket_state& ab = st.buckets;

  // Concurrency first: it is the only check that takes nothing from a bucket.
  const bool take = concurrency != slots::skip;
  if (take && al.concurrent != 0) {
    if (!ab.gate.try_enter(al.concurrent))
      return refuse(a, t, errc::concurrency_limited, 0,
                    core::str_cat(subject(ag, nullptr), " concurrent=", al.concurrent));
    // An aliasing pointer: the ticket keeps the agent's state alive, not just the plan's.
    a.agent_slot = slot_ticket(std::shared_ptr<concurrency_gate>(ag.state, &ab.gate));
  }
  if (take && re != nullptr && re->limits.concurrent != 0) {
    if (!re->state->gate.try_enter(re->limits.concurrent))
      return refuse(a, t, errc::concurrency_limited, 0,
                    core::str_cat(subject(ag, re), " concurrent=", re->limits.concurrent));
    a.rule_slot = slot_ticket(std::shared_ptr<concurrency_gate>(re->state, &re->state->gate));
  }

  // An intercepted tunnel: its requests are rated one by one, the tunnel itself only holds
  // the slots.
  if (concurrency == slots::only) return a;

  // Hourly request quotas.
  if (al.requests_per_hour.enabled()) {
    const auto r = ab.requests_per_hour.try_acquire(al.requests_per_hour, now_ns);
    if (!r.allowed)
      return refuse(
          a, t, errc::quota_exceeded, r.retry_after_ns,
          core::str_cat(subject(ag, nullptr), " requests_per_hour=", al.source.requests_per_hour));
    t.add(ab.requests_per_hour, al.requests_per_hour);
  }
  if (re != nullptr && re->limits.requests_per_hour.enabled()) {
    const auto r = re->state->requests_per_hour.try_acquire(re->limits.requests_per_hour, now_ns);
    if (!r.allowed)
      return refuse(a, t, errc::quota_exceeded, r.retry_after_ns,
                    core::str_cat(subject(ag, re),
                                  " requests_per_hour=", re->limits.source.requests_per_hour));
    t.add(re->state->requests_per_hour, re->limits.requests_per_hour);
  }
  // Hourly byte quotas: bytes are charged after the fact (throttle), so here a quota in debt
  // refuses until the debt is paid off.
  if (al.bytes_per_hour.enabled()) {
    if (const std::int64_t w = ab.bytes_per_hour.exhausted(al.bytes_per_hour, now_ns); w > 0)
      return refuse(
          a, t, errc::quota_exceeded, w,
          core::str_cat(subject(ag, nullptr), " bytes_per_hour=", al.source.bytes_per_hour));
  }
  if (re != nullptr && re->limits.bytes_per_hour.enabled()) {
    if (const std::int64_t w =
            re->state->bytes_per_hour.exhausted(re->limits.bytes_per_hour, now_ns);
        w > 0)
      return refuse(
          a, t, errc::quota_exceeded, w,
          core::str_cat(subject(ag, re), " bytes_per_hour=", re->limits.source.bytes_per_hour));
  }

  // Request buckets.
  if (al.requests.enabled()) {
    const auto r = ab.requests.try_acquire(al.requests, now_ns);
    if (!r.allowed)
      return refuse(a, t, errc::rate_limited, r.retry_after_ns,
                    core::str_cat(subject(ag, nullptr), " ", al.requests_label()));
    t.add(ab.requests, al.requests);
  }
  if (re != nullptr && re->limits.requests.enabled()) {
    const auto r = re->state->requests.try_acquire(re->limits.requests, now_ns);
    if (!r.allowed)
      return refuse(a, t, errc::rate_limited, r.retry_after_ns,
                    core::str_cat(subject(ag, re), " ", re->limits.requests_label()));
  }
  return a;
}

std::int64_t plan::throttle(std::size_t agent_index, std::size_t rule_position, direction dir,
                            std::uint64_t bytes, std::int64_t now_ns) const noexcept {
  if (agent_index >= agents_.size() || bytes == 0) return 0;
  const agent_entry& ag = agents_[agent_index];
  std::int64_t delay = 0;
  const auto apply = [&](const rate_limits& l, bucket_state& b) noexcept {
    if (!l.bytes) return;
    const bool up = dir == direction::upload;
    const gcra_params& p = up ? l.upload : l.download;
    if (p.enabled())
      delay = std::max(delay, (up ? b.upload : b.download).reserve(p, now_ns, bytes));
    if (l.bytes_per_hour.enabled()) b.bytes_per_hour.charge(l.bytes_per_hour, now_ns, bytes);
  };
  apply(ag.limits, ag.state->buckets);
  if (rule_position < ag.rules.size()) {
    const rule_entry& re = ag.rules[rule_position];
    if (re.state) apply(re.limits, *re.state);
  }
  return delay;
}

bool plan::record_failure(std::size_t agent_index, std::int64_t now_ns) const {
  if (agent_index >= agents_.size()) return false;
  const agent_entry& ag = agents_[agent_index];
  return ag.state->breaker.record_failure(ag.breaker, now_ns);
}

std::size_t plan::agent_index(const policy::compiled_agent& agent) const noexcept {
  if (snapshot_ == nullptr) return npos;
  const auto all = snapshot_->agents();
  // std::less: a total order even for pointers into different arrays.
  const std::less<const policy::compiled_agent*> before;
  if (before(&agent, all.data()) || !before(&agent, all.data() + all.size())) return npos;
  const auto i = static_cast<std::size_t>(&agent - all.data());
  return i < agents_.size() ? i : npos;
}

std::size_t plan::agent_index(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < agents_.size(); ++i)
    if (agents_[i].name == name) return i;
  return npos;
}

std::size_t plan::rule_position(std::size_t agent_index,
                                const policy::compiled_rule* rule) const noexcept {
  if (agent_index >= agents_.size() || rule == nullptr) return no_rule;
  const auto& rules = agents_[agent_index].rules;
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (rules[i].compiled == rule) return i;
  return no_rule;
}

std::size_t plan::rule_position(std::size_t agent_index, std::string_view rule) const noexcept {
  if (agent_index >= agents_.size()) return no_rule;
  const auto& rules = agents_[agent_index].rules;
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (rules[i].name == rule) return i;
  return no_rule;
}

}  // namespace airlock::filters::rate_limit
