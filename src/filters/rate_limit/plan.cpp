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
  lease* leases[4] = {};
  int count = 0;
  int lease_count = 0;
  void add(gcra& g, const gcra_params& p) noexcept {
    buckets[count] = &g;
    params[count] = &p;
    ++count;
  }
  void add(lease& l) noexcept { leases[lease_count++] = &l; }
  void give_back() noexcept {
    for (int i = 0; i < count; ++i)
      buckets[i]->refund(*params[i]);
    for (int i = 0; i < lease_count; ++i)
      leases[i]->give_back();
    count = lease_count = 0;
  }
};

// Where admit() takes quota and bucket units from.
enum class source {
  local,   // state: local: this process's buckets
  shared,  // state: redis: this replica's leases on the fleet's buckets
  share,   // state: redis, store unavailable, on_unavailable: local: limits / replicas
  deny,    // state: redis, store unavailable, on_unavailable: deny
};

source source_of(const shared_store* store, bool store_answered) {
  if (store == nullptr) return source::local;
  if (store_answered && store->available()) return source::shared;
  return store->settings().deny_when_unavailable ? source::deny : source::share;
}

// Fills in a refusal and frees what was taken.
void fill_refusal(admission& a, taken& t, errc why, std::int64_t retry_ns, std::string limit) {
  t.give_back();
  a.agent_slot.reset();
  a.rule_slot.reset();
  a.refill.reset();
  a.sync.reset();
  a.error = why;
  a.retry_after_ns = std::max<std::int64_t>(retry_ns, 0);
  a.retry_after_seconds = seconds_ceil(a.retry_after_ns);
  a.limit = std::move(limit);
}

// The same, moving `a` out (refusals are the slow path).
admission refuse(admission& a, taken& t, errc why, std::int64_t retry_ns, std::string limit) {
  fill_refusal(a, t, why, retry_ns, std::move(limit));
  return std::move(a);
}

// The hourly quotas and the request buckets: admit()'s last checks. Fills `a` with a refusal or
// a refill when one does not pass; returns whether all passed.
bool take_units(const plan::agent_entry& ag, const plan::rule_entry* re, std::int64_t now_ns,
                source src, shared_store* store, admission& a, taken& t) {
  const bool share = src == source::share || src == source::deny;
  const rate_limits& al = share ? ag.share : ag.limits;
  const rate_limits* rl = re == nullptr ? nullptr : share ? &re->share : &re->limits;
  bucket_state& ab = ag.state->buckets;
  const auto shared_limit = [](const rate_limits* l) {
    return l != nullptr &&
           (l->requests.enabled() || l->requests_per_hour.enabled() || l->bytes_per_hour.enabled());
  };
  if (src == source::deny && (shared_limit(&al) || shared_limit(rl))) {
    fill_refusal(a, t, errc::store_unavailable, 0,
                 core::str_cat(subject(ag, nullptr), " shared limits: store unavailable"));
    return false;
  }
  // One bucket: this process's, or this replica's lease on the fleet's.
  const auto take = [&](gcra& g, const std::shared_ptr<lease>& l, const gcra_params& p, errc why,
                        auto&& limit) -> bool {
    if (!p.enabled()) return true;
    if (src == source::shared && l) {
      store->expire(*l, p, now_ns);
      if (l->take()) {
        t.add(*l);
        return true;
      }
      // The store said "empty" a moment ago: refuse until then without asking again.
      if (const std::int64_t until = l->empty_until_ns.load(std::memory_order_relaxed);
          now_ns < until) {
        fill_refusal(a, t, why, until - now_ns, limit());
        return false;
      }
      t.give_back();
      a.refill = l;
      a.refill_params = p;
      a.refill_want = store->lease_batch(p);
      return false;
    }
    const auto r = g.try_acquire(p, now_ns);
    if (!r.allowed) {
      fill_refusal(a, t, why, r.retry_after_ns, limit());
      return false;
    }
    t.add(g, p);
    return true;
  };
  // Hourly request quotas.
  if (!take(ab.requests_per_hour, ab.shared_requests_per_hour, al.requests_per_hour,
            errc::quota_exceeded, [&] {
              return core::str_cat(subject(ag, nullptr),
                                   " requests_per_hour=", al.source.requests_per_hour);
            }))
    return false;
  if (rl != nullptr && !take(re->state->requests_per_hour, re->state->shared_requests_per_hour,
                             rl->requests_per_hour, errc::quota_exceeded, [&] {
                               return core::str_cat(subject(ag, re), " requests_per_hour=",
                                                    rl->source.requests_per_hour);
                             }))
    return false;
  // Hourly byte quotas: bytes are charged after the fact (throttle), so here a quota in debt
  // refuses until the debt is paid off. The fleet's under state: redis (as the store last said;
  // asked again first when that is stale), limits / replicas while it is unavailable.
  const auto bytes_quota = [&](bucket_state& b, const gcra_params& full, const gcra_params& part,
                               auto&& limit) -> bool {
    const std::shared_ptr<byte_tally>& tally = b.shared_bytes_per_hour;
    if (src == source::shared && tally && full.enabled()) {
      const std::int64_t synced = tally->synced_at_ns.load(std::memory_order_relaxed);
      if (time_between(synced, now_ns) >= store->stale_ns()) {
        t.give_back();
        a.sync = tally;
        a.sync_params = full;
        return false;
      }
      store->note_bytes(tally, full, 0, now_ns);  // refreshed in the background when due
      if (const std::int64_t until = tally->exhausted_until_ns.load(std::memory_order_relaxed);
          now_ns < until) {
        fill_refusal(a, t, errc::quota_exceeded, until - now_ns, limit());
        return false;
      }
      return true;
    }
    const gcra_params& p = store != nullptr ? part : full;
    if (!p.enabled()) return true;
    if (const std::int64_t w = b.bytes_per_hour.exhausted(p, now_ns); w > 0) {
      fill_refusal(a, t, errc::quota_exceeded, w, limit());
      return false;
    }
    return true;
  };
  if (!bytes_quota(ab, ag.limits.bytes_per_hour, ag.share.bytes_per_hour, [&] {
        return core::str_cat(subject(ag, nullptr), " bytes_per_hour=", al.source.bytes_per_hour);
      }))
    return false;
  if (rl != nullptr &&
      !bytes_quota(*re->state, re->limits.bytes_per_hour, re->share.bytes_per_hour, [&] {
        return core::str_cat(subject(ag, re), " bytes_per_hour=", rl->source.bytes_per_hour);
      }))
    return false;
  // Request buckets.
  if (!take(ab.requests, ab.shared_requests, al.requests, errc::rate_limited,
            [&] { return core::str_cat(subject(ag, nullptr), " ", al.requests_label()); }))
    return false;
  if (rl != nullptr &&
      !take(re->state->requests, re->state->shared_requests, rl->requests, errc::rate_limited,
            [&] { return core::str_cat(subject(ag, re), " ", rl->requests_label()); }))
    return false;
  return true;
}

}  // namespace

plan::plan(std::vector<agent_entry> agents, std::shared_ptr<const void> keep_alive,
           const policy::snapshot* snapshot, shared_store* store)
    : agents_(std::move(agents)),
      keep_alive_(std::move(keep_alive)),
      snapshot_(snapshot),
      store_(store) {
  for (const auto& a : agents_) {
    if (a.limits.any) limits_anything_ = true;
    for (const auto& r : a.rules)
      if (r.state && r.limits.any) limits_anything_ = true;
  }
}

admission plan::check_agent(std::size_t agent_index, std::int64_t now_ns) const {
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
  // state: redis, on_unavailable: deny, and the fleet's stopped agents not read since start-up
  // (the store was down): this agent may be one the fleet stopped.
  if (store_ != nullptr && !store_->control_read() && store_->settings().deny_when_unavailable)
    return refuse(a, t, errc::store_unavailable, 0,
                  core::str_cat("agent ", ag.name, ": the fleet's stops not read yet"));
  return a;
}

admission plan::admit(std::size_t agent_index, std::size_t rule_position, std::int64_t now_ns,
                      slots concurrency) const {
  admission a = check_agent(agent_index, now_ns);
  if (!a.admitted()) return a;
  taken t;
  const agent_entry& ag = agents_[agent_index];
  agent_state& st = *ag.state;

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
  if (concurrency.agent && al.concurrent != 0) {
    if (!ab.gate.try_enter(al.concurrent))
      return refuse(a, t, errc::concurrency_limited, 0,
                    core::str_cat(subject(ag, nullptr), " concurrent=", al.concurrent));
    // An aliasing pointer: the ticket keeps the agent's state alive, not just the plan's.
    a.agent_slot = slot_ticket(std::shared_ptr<concurrency_gate>(ag.state, &ab.gate));
  }
  if (concurrency.rule && re != nullptr && re->limits.concurrent != 0) {
    if (!re->state->gate.try_enter(re->limits.concurrent))
      return refuse(a, t, errc::concurrency_limited, 0,
                    core::str_cat(subject(ag, re), " concurrent=", re->limits.concurrent));
    a.rule_slot = slot_ticket(std::shared_ptr<concurrency_gate>(re->state, &re->state->gate));
  }

  take_units(ag, re, now_ns, source_of(store_, true), store_, a, t);
  return a;
}

admission plan::take_tokens(std::size_t agent_index, std::size_t rule_position, std::int64_t now_ns,
                            bool store_answered) const {
  admission a;
  taken t;
  if (agent_index >= agents_.size())
    return refuse(a, t, errc::internal_error, 0, "agent not in the rate plan");
  const agent_entry& ag = agents_[agent_index];
  const rule_entry* re = nullptr;
  if (rule_position < ag.rules.size() && ag.rules[rule_position].state &&
      ag.rules[rule_position].limits.any)
    re = &ag.rules[rule_position];
  take_units(ag, re, now_ns, source_of(store_, store_answered), store_, a, t);
  return a;
}

std::int64_t plan::throttle(std::size_t agent_index, std::size_t rule_position, direction dir,
                            std::uint64_t bytes, std::int64_t now_ns) const noexcept {
  if (agent_index >= agents_.size() || bytes == 0) return 0;
  const agent_entry& ag = agents_[agent_index];
  std::int64_t delay = 0;
  const bool shared = store_ != nullptr && store_->available();
  const auto apply = [&](const rate_limits& l, const rate_limits& share, bucket_state& b) noexcept {
    if (!l.bytes) return;
    const bool up = dir == direction::upload;
    const gcra_params& p = up ? l.upload : l.download;
    if (p.enabled())
      delay = std::max(delay, (up ? b.upload : b.download).reserve(p, now_ns, bytes));
    if (!l.bytes_per_hour.enabled()) return;
    // The fleet's quota under state: redis; this replica's share while the store is away.
    if (shared && b.shared_bytes_per_hour)
      store_->note_bytes(b.shared_bytes_per_hour, l.bytes_per_hour, bytes, now_ns);
    else
      b.bytes_per_hour.charge(store_ != nullptr ? share.bytes_per_hour : l.bytes_per_hour, now_ns,
                              bytes);
  };
  apply(ag.limits, ag.share, ag.state->buckets);
  if (rule_position < ag.rules.size()) {
    const rule_entry& re = ag.rules[rule_position];
    if (re.state) apply(re.limits, re.share, *re.state);
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
