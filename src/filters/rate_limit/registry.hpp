#pragma once
// The rate-limit state of one proxy process. It owns the buckets, gates and breakers, keyed by
// agent name and by (agent name, rule name), and binds each policy snapshot to them as a plan:
// state survives a reload for every agent (and agent-on-rule) that keeps its name, so a reload
// neither refills an exhausted bucket nor forgets a suspension. States of names that are gone
// are dropped on bind, except that a stopped agent's name stays stopped (a reload must not
// silently resume an agent an operator stopped).
//
// Admin operations (stop, resume, status) act on the states of the last bound plan.
//
// @par Thread Safety
// Every member function may be called concurrently (a mutex; bind and admin time only). The
// plans it returns are used without it.

#include "filters/rate_limit/plan.hpp"
#include "filters/rate_limit/tool_limits.hpp"
#include "policy/model.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::rate_limit {

// What bind() needs of an agent; built from a snapshot, or by hand in tests.
struct rule_spec {
  std::string name;
  policy::model::rate rate;
  const policy::compiled_rule* compiled = nullptr;
};
struct agent_spec {
  std::string name;
  policy::model::rate rate;
  policy::model::breaker breaker;
  std::vector<rule_spec> rules;  // in the agent's order of evaluation
  const policy::compiled_agent* compiled = nullptr;
};

// One agent's state for the admin port's JSON view (the caller renders it).
struct agent_status {
  std::string name;
  bool in_policy = true;                // false: gone from the policy but remembered as stopped
  bool stopped = false;                 // kill switch
  std::int64_t suspended_until_ns = 0;  // breaker; 0 when not suspended
  std::uint32_t suspended_seconds_left = 0;
  std::uint32_t in_flight = 0;   // requests and tunnels; counted only when `concurrent` is set
  std::uint32_t concurrent = 0;  // the cap; 0 = none
  std::uint64_t requests_available = 0;  // tokens in the request bucket; 0 when unset
  // What is left of the hourly quotas in this process's buckets; nullopt when the quota is not
  // set, or is kept in the shared store (state: redis), whose count this process does not hold.
  std::optional<std::uint64_t> requests_per_hour_left;
  std::optional<std::uint64_t> bytes_per_hour_left;
};

class registry {
 public:
  // Binds a snapshot: the agents in snapshot.agents() order, each with its rules. Never null.
  std::shared_ptr<const plan> bind(std::shared_ptr<const policy::snapshot> snapshot);
  // The same from plain specs; `keep_alive` is held by the plan (e.g. whatever `compiled`
  // pointers point into).
  std::shared_ptr<const plan> bind(std::vector<agent_spec> agents,
                                   std::shared_ptr<const void> keep_alive = {},
                                   const policy::snapshot* snapshot = nullptr);

  // state: redis: the fleet's store, for every plan bound from now on (call before the first
  // bind; the store outlives the registry's plans). Null: state: local.
  void use_store(shared_store* store);
  shared_store* store() const noexcept { return store_; }

  // The per-tool limits of the snapshot's MCP rules (tool_limits.hpp), their buckets kept
  // across binds like the rules' (by agent, rule and tool name). Never null.
  std::shared_ptr<const tool_limits> bind_tools(std::shared_ptr<const policy::snapshot> snapshot);

  // The last bound plan (null before the first bind).
  std::shared_ptr<const plan> current() const;

  // The kill switch. False when no agent of that name is in the last bound plan; resume() also
  // accepts a stopped name that has left the policy (so it can be forgotten), and lifts a
  // breaker suspension too (an operator's resume is a fresh start).
  bool stop(std::string_view agent);
  bool resume(std::string_view agent);
  // Whether `agent` is stopped (also when it has left the policy meanwhile).
  bool is_stopped(std::string_view agent) const;
  // Called after every stop() that stopped an agent (the admin port's, or another replica's
  // through fleet_control), outside the lock: what else the agent holds ends too (its held
  // requests, filters/approval). Set once, before the first stop.
  void set_stop_listener(std::function<void(std::string_view agent)> listener);
  // A breaker trip on another replica (state: redis): the agent is suspended until `until_ns`.
  // False when no agent of that name is in the last bound plan.
  bool suspend(std::string_view agent, std::int64_t until_ns);
  // Names of stopped agents, sorted, including remembered names no longer in the policy.
  std::vector<std::string> stopped() const;

  // Every agent of the last bound plan in policy order, then remembered stopped names.
  std::vector<agent_status> status(std::int64_t now_ns) const;

 private:
  using rule_key = std::pair<std::string, std::string>;  // (agent, rule)
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<agent_state>, std::less<>> agents_;
  std::map<rule_key, std::shared_ptr<bucket_state>> rules_;
  using tool_key = std::tuple<std::string, std::string, std::string>;  // (agent, rule, tool)
  std::map<tool_key, std::shared_ptr<bucket_state>> tools_;
  std::set<std::string, std::less<>> stopped_elsewhere_;  // stopped names not in the policy
  std::shared_ptr<const plan> current_;
  shared_store* store_ = nullptr;
  std::function<void(std::string_view)> stop_listener_;

  // A new state for an agent (rule empty) or an agent on a rule, with its leases when shared.
  std::shared_ptr<bucket_state> new_buckets(std::string_view agent, std::string_view rule) const;
};

}  // namespace airlock::filters::rate_limit
