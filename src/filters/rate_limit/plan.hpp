#pragma once
// The rate limits of one policy snapshot, ready for the hot path: built by registry::bind(),
// immutable afterwards, and used by every worker thread at once. Agents are addressed by their
// position in snapshot::agents(), rules by their position in that agent's `rules` list
// (compiled_agent::rules); the helpers below find both from the snapshot's pointers.
//
// The plan keeps its snapshot and the states it points to alive. A request or tunnel holds its
// admission (and with it its concurrency slots) for as long as it lasts; the slots stay valid
// even after the plan is gone.
//
// Time is passed in by the caller (steady-clock nanoseconds); nothing here reads a clock.
//
// @par Thread Safety
// All const member functions may be called concurrently. admit() and throttle() are lock-free,
// and admit() does not allocate unless it refuses.

#include "core/errc.hpp"
#include "filters/rate_limit/rate_limits.hpp"
#include "filters/rate_limit/shared_store.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {
class snapshot;
struct compiled_agent;
struct compiled_rule;
}  // namespace airlock::policy

namespace airlock::filters::rate_limit {

enum class direction { upload, download };

// Which concurrency slots an admission takes (plan::admit). A CONNECT is a request (slots and
// tokens); its tunnel holds its slots while it lasts, for one request inside at a time: a
// request inside takes none again unless it is an HTTP/2 stream beside others in flight (each
// such stream is one more request in flight), and the rule's slot unless it is the CONNECT's
// rule (another rule's `concurrent` must not be passed by a tunnel opened under the first).
struct concurrency_slots {
  bool agent = true;
  bool rule = true;
};

// The outcome of plan::admit(). Movable; destroying it (or its tickets) frees the concurrency
// slots it holds.
struct admission {
  // ok, agent_stopped, agent_suspended, concurrency_limited, quota_exceeded, rate_limited, or
  // internal_error for an index that is not in the plan.
  core::errc error = core::errc::ok;
  // For a Retry-After header (RFC 9110 section 10.2.3): rounded up, at least 1 when the refusal
  // has a time (suspension, quota, rate); 0 when it has none (stopped, concurrency).
  std::uint32_t retry_after_seconds = 0;
  std::int64_t retry_after_ns = 0;
  // The limit that refused, for the refusal's detail: "agent coder requests_per_minute=600",
  // "rule api (agent coder) requests_per_second=5". Empty when admitted.
  std::string limit;
  slot_ticket agent_slot;  // held only when the agent has a `concurrent` cap
  slot_ticket rule_slot;   // held only when the agent-on-rule has one
  // state: redis: this replica's lease on a shared bucket is empty. Nothing was taken from the
  // buckets (the slots are held): refill it (shared_store::acquire), then call take_tokens().
  std::shared_ptr<lease> refill;
  gcra_params refill_params;
  std::uint32_t refill_want = 0;
  // state: redis: what this replica knows of a shared byte quota is older than
  // shared_store::stale_ns(). Nothing was taken: refresh it (shared_store::sync_bytes), then
  // call take_tokens().
  std::shared_ptr<byte_tally> sync;
  gcra_params sync_params;

  bool must_wait() const noexcept { return refill != nullptr || sync != nullptr; }
  bool admitted() const noexcept { return error == core::errc::ok && !must_wait(); }
  explicit operator bool() const noexcept { return admitted(); }
};

class plan {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  // For rule_position: admit with the agent's limits only.
  static constexpr std::size_t no_rule = npos;

  // Checks, in order: the kill switch, the breaker's suspension, concurrency (agent, then
  // rule), hourly quotas (requests, then bytes; agent, then rule), request buckets (agent,
  // then rule). The first that refuses decides; a refused admission consumes nothing (what the
  // earlier checks took is given back). Does not record a failure: the caller does that
  // (record_failure) for the refusals it counts.
  using slots = concurrency_slots;
  // With a shared store (state: redis) the hourly request quotas and the request buckets are
  // the fleet's, taken from this replica's leases; an empty lease makes the admission
  // must_wait() instead (concurrency slots held, nothing else taken). The hourly byte quotas
  // are the fleet's too: refused while the store last said they are in debt, must_wait() when
  // that was said too long ago.
  admission admit(std::size_t agent_index, std::size_t rule_position, std::int64_t now_ns,
                  slots concurrency = {}) const;

  // admit()'s first checks alone, which need no rule: the kill switch, the breaker's
  // suspension, and (state: redis, on_unavailable: deny) the fleet's stops not read yet. The
  // agent gate runs them before the decision, so a stopped agent learns nothing of its rules.
  admission check_agent(std::size_t agent_index, std::int64_t now_ns) const;

  // The quotas and buckets of admit() alone, after a wait for a lease: `store_answered` false
  // (the refill got no answer) applies on_unavailable as if the store were down. The result
  // holds no slots (the first admission kept them).
  admission take_tokens(std::size_t agent_index, std::size_t rule_position, std::int64_t now_ns,
                        bool store_answered = true) const;

  // How long to wait before sending `bytes` of body in `dir`: the longer of the agent's and the
  // rule's byte buckets (0 when neither is set). Always charges them, and the bytes_per_hour
  // quotas of both (the fleet's under state: redis, told in batches), so call it once per
  // chunk, before sending it.
  std::int64_t throttle(std::size_t agent_index, std::size_t rule_position, direction dir,
                        std::uint64_t bytes, std::int64_t now_ns) const noexcept;

  // One refusal or upstream error for the agent's circuit breaker; true when this call tripped
  // it (the agent is now suspended for the cooldown).
  bool record_failure(std::size_t agent_index, std::int64_t now_ns) const;

  // The agent's position for a compiled_agent of this plan's snapshot; npos for any other.
  std::size_t agent_index(const policy::compiled_agent& agent) const noexcept;
  std::size_t agent_index(std::string_view name) const noexcept;
  // The first position of `rule` in the agent's rules; no_rule when it is not there.
  std::size_t rule_position(std::size_t agent_index,
                            const policy::compiled_rule* rule) const noexcept;
  std::size_t rule_position(std::size_t agent_index, std::string_view rule) const noexcept;

  std::size_t agent_count() const noexcept { return agents_.size(); }
  const std::string& agent_name(std::size_t agent_index) const { return agents_[agent_index].name; }
  // True when some agent or agent-on-rule has a limit (the kill switch and breaker aside).
  bool limits_anything() const noexcept { return limits_anything_; }
  // Null when the plan was bound from specs rather than a snapshot.
  const policy::snapshot* snapshot() const noexcept { return snapshot_; }

  struct rule_entry {
    std::string name;
    rate_limits limits;
    rate_limits share;  // limits / replicas: state: redis with the store unavailable
    std::shared_ptr<bucket_state> state;  // null when the rule sets no rate for agents
    const policy::compiled_rule* compiled = nullptr;
  };
  struct agent_entry {
    std::string name;
    rate_limits limits;
    rate_limits share;  // limits / replicas: state: redis with the store unavailable
    breaker_params breaker;
    std::shared_ptr<agent_state> state;  // never null
    std::vector<rule_entry> rules;       // by position in the agent's rules
    const policy::compiled_agent* compiled = nullptr;
  };

  // Built by registry::bind().
  plan(std::vector<agent_entry> agents, std::shared_ptr<const void> keep_alive,
       const policy::snapshot* snapshot, shared_store* store = nullptr);
  const std::vector<agent_entry>& agents() const noexcept { return agents_; }
  shared_store* store() const noexcept { return store_; }

 private:
  std::vector<agent_entry> agents_;
  std::shared_ptr<const void> keep_alive_;
  const policy::snapshot* snapshot_ = nullptr;
  shared_store* store_ = nullptr;  // null: state: local
  bool limits_anything_ = false;
};

}  // namespace airlock::filters::rate_limit
