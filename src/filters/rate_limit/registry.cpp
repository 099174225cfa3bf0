#include "filters/rate_limit/registry.hpp"

#include "policy/snapshot.hpp"

#include <algorithm>
#include <limits>

namespace airlock::filters::rate_limit {

std::shared_ptr<const plan> registry::bind(std::shared_ptr<const policy::snapshot> snapshot) {
  std::vector<agent_spec> specs;
  if (snapshot) {
    const auto agents = snapshot->agents();
    const auto& models = snapshot->model().agents;
    specs.reserve(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i) {
      const policy::compiled_agent& a = agents[i];
      agent_spec s;
      s.name = a.name;
      s.compiled = &a;
      // The compiler builds agents() in the model's order; the name check keeps this honest
      // should that ever change.
      const policy::model::agent* m =
          i < models.size() && models[i].name == a.name ? &models[i] : nullptr;
      if (m == nullptr) {
        const auto it =
            std::find_if(models.begin(), models.end(),
                         [&](const policy::model::agent& x) { return x.name == a.name; });
        if (it != models.end()) m = &*it;
      }
      if (m != nullptr) {
        s.rate = m->rate;
        s.breaker = m->breaker;
      }
      s.rules.reserve(a.rules.size());
      for (const policy::compiled_rule* r : a.rules) {
        rule_spec rs;
        rs.compiled = r;
        if (r != nullptr) {
          rs.name = r->name;
          if (r->source != nullptr) rs.rate = r->source->rate;
        }
        s.rules.push_back(std::move(rs));
      }
      specs.push_back(std::move(s));
    }
  }
  const policy::snapshot* raw = snapshot.get();
  return bind(std::move(specs), std::move(snapshot), raw);
}

std::shared_ptr<const plan> registry::bind(std::vector<agent_spec> agents,
                                           std::shared_ptr<const void> keep_alive,
                                           const policy::snapshot* snapshot) {
  std::lock_guard lock(mutex_);
  decltype(agents_) next_agents;
  decltype(rules_) next_rules;
  std::vector<plan::agent_entry> entries;
  entries.reserve(agents.size());

  for (agent_spec& spec : agents) {
    std::shared_ptr<agent_state>& state = next_agents[spec.name];
    if (!state) {
      if (auto it = agents_.find(spec.name); it != agents_.end()) {
        state = it->second;
      } else {
        state = std::make_shared<agent_state>();
        if (store_ != nullptr) {
          auto b = new_buckets(spec.name, {});
          state->buckets.shared_requests = std::move(b->shared_requests);
          state->buckets.shared_requests_per_hour = std::move(b->shared_requests_per_hour);
          state->buckets.shared_bytes_per_hour = std::move(b->shared_bytes_per_hour);
        }
        // Stopped before it left the policy: it comes back stopped.
        if (auto s = stopped_elsewhere_.find(spec.name); s != stopped_elsewhere_.end()) {
          state->breaker.stop();
          stopped_elsewhere_.erase(s);
        }
      }
    }
    plan::agent_entry e;
    e.name = spec.name;
    e.limits = rate_limits::compile(spec.rate);
    e.share = rate_limits::compile_share(spec.rate, store_ ? store_->settings().replicas : 1);
    e.breaker = {spec.breaker.max_failures, to_ns(spec.breaker.window),
                 to_ns(spec.breaker.cooldown)};
    e.state = state;
    e.compiled = spec.compiled;
    e.rules.reserve(spec.rules.size());
    for (rule_spec& rs : spec.rules) {
      plan::rule_entry r;
      r.limits = rate_limits::compile(rs.rate);
      r.share = rate_limits::compile_share(rs.rate, store_ ? store_->settings().replicas : 1);
      r.compiled = rs.compiled;
      if (r.limits.any) {
        rule_key key{spec.name, rs.name};
        std::shared_ptr<bucket_state>& rstate = next_rules[key];
        if (!rstate) {
          if (auto it = rules_.find(key); it != rules_.end())
            rstate = it->second;
          else
            rstate = new_buckets(spec.name, rs.name);
        }
        r.state = rstate;
      }
      r.name = std::move(rs.name);
      e.rules.push_back(std::move(r));
    }
    entries.push_back(std::move(e));
  }

  for (const auto& [name, state] : agents_)
    if (!next_agents.contains(name) && state->breaker.stopped()) stopped_elsewhere_.insert(name);

  agents_ = std::move(next_agents);
  rules_ = std::move(next_rules);
  current_ =
      std::make_shared<const plan>(std::move(entries), std::move(keep_alive), snapshot, store_);
  return current_;
}

std::shared_ptr<const tool_limits> registry::bind_tools(
    std::shared_ptr<const policy::snapshot> snapshot) {
  std::lock_guard lock(mutex_);
  decltype(tools_) next;
  std::vector<tool_limits::agent_tools> agents;
  const std::uint32_t replicas = store_ ? store_->settings().replicas : 1;
  bool any = false;
  for (const policy::compiled_agent& a : snapshot->agents()) {
    tool_limits::agent_tools at;
    at.agent = a.name;
    for (const policy::compiled_rule* r : a.rules) {
      if (r == nullptr) continue;
      for (std::size_t i = 0; i < r->mcp.tools.size(); ++i) {
        const policy::compiled_mcp_tool& t = r->mcp.tools[i];
        if (!t.rate.any()) continue;
        if (at.rules.size() <= r->index) at.rules.resize(r->index + 1);
        auto& rt = at.rules[r->index];
        rt.rule = r->name;
        if (rt.tools.size() <= i) rt.tools.resize(r->mcp.tools.size());
        tool_limits::tool_entry& e = rt.tools[i];
        e.name = t.name;
        e.limits = rate_limits::compile_share(t.rate, replicas);
        tool_key key{a.name, r->name, t.name};
        std::shared_ptr<bucket_state>& state = next[key];
        if (!state) {
          const auto it = tools_.find(key);
          state = it != tools_.end() ? it->second : std::make_shared<bucket_state>();
        }
        e.state = state;
        any = true;
      }
    }
    agents.push_back(std::move(at));
  }
  tools_ = std::move(next);
  if (!any) agents.clear();
  return std::make_shared<const tool_limits>(std::move(agents), std::move(snapshot));
}

void registry::use_store(shared_store* store) {
  std::lock_guard lock(mutex_);
  store_ = store;
}

std::shared_ptr<bucket_state> registry::new_buckets(std::string_view agent,
                                                    std::string_view rule) const {
  auto b = std::make_shared<bucket_state>();
  // Made with the state, whatever its limits: a reload that adds a limit must not assign to a
  // state that other threads read.
  if (store_ != nullptr) {
    b->shared_requests = std::make_shared<lease>(store_->bucket_key(agent, rule, "requests"));
    b->shared_requests_per_hour =
        std::make_shared<lease>(store_->bucket_key(agent, rule, "requests_per_hour"));
    b->shared_bytes_per_hour =
        std::make_shared<byte_tally>(store_->bucket_key(agent, rule, "bytes_per_hour"));
  }
  return b;
}

std::shared_ptr<const plan> registry::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

bool registry::stop(std::string_view agent) {
  std::function<void(std::string_view)> listener;
  {
    std::lock_guard lock(mutex_);
    const auto it = agents_.find(agent);
    if (it == agents_.end()) return false;
    it->second->breaker.stop();
    listener = stop_listener_;
  }
  if (listener) listener(agent);
  return true;
}

bool registry::is_stopped(std::string_view agent) const {
  std::lock_guard lock(mutex_);
  if (const auto it = agents_.find(agent); it != agents_.end())
    return it->second->breaker.stopped();
  return stopped_elsewhere_.contains(agent);
}

void registry::set_stop_listener(std::function<void(std::string_view agent)> listener) {
  std::lock_guard lock(mutex_);
  stop_listener_ = std::move(listener);
}

bool registry::resume(std::string_view agent) {
  std::lock_guard lock(mutex_);
  if (const auto it = agents_.find(agent); it != agents_.end()) {
    it->second->breaker.resume();
    it->second->breaker.clear();
    return true;
  }
  if (const auto s = stopped_elsewhere_.find(agent); s != stopped_elsewhere_.end()) {
    stopped_elsewhere_.erase(s);
    return true;
  }
  return false;
}

bool registry::suspend(std::string_view agent, std::int64_t until_ns) {
  std::lock_guard lock(mutex_);
  const auto it = agents_.find(agent);
  if (it == agents_.end()) return false;
  it->second->breaker.suspend_until(until_ns);
  return true;
}

std::vector<std::string> registry::stopped() const {
  std::lock_guard lock(mutex_);
  std::set<std::string> names(stopped_elsewhere_.begin(), stopped_elsewhere_.end());
  for (const auto& [name, state] : agents_)
    if (state->breaker.stopped()) names.insert(name);
  return {names.begin(), names.end()};
}

std::vector<agent_status> registry::status(std::int64_t now_ns) const {
  std::lock_guard lock(mutex_);
  std::vector<agent_status> out;
  if (current_) {
    std::set<std::string_view> seen;
    for (const plan::agent_entry& e : current_->agents()) {
      if (!seen.insert(e.name).second) continue;
      agent_status s;
      s.name = e.name;
      s.stopped = e.state->breaker.stopped();
      if (e.breaker.enabled()) {
        if (const std::int64_t until = e.state->breaker.check(now_ns); until != 0) {
          s.suspended_until_ns = until;
          s.suspended_seconds_left = seconds_ceil(time_between(now_ns, until));
        }
      }
      s.in_flight = e.state->buckets.gate.in_flight();
      s.concurrent = e.limits.concurrent;
      const bucket_state& b = e.state->buckets;
      s.requests_available = b.requests.available(e.limits.requests, now_ns);
      if (e.limits.source.requests_per_hour != 0 && !b.shared_requests_per_hour)
        s.requests_per_hour_left =
            b.requests_per_hour.available(e.limits.requests_per_hour, now_ns);
      if (e.limits.source.bytes_per_hour != 0 && !b.shared_bytes_per_hour)
        s.bytes_per_hour_left = b.bytes_per_hour.available(e.limits.bytes_per_hour, now_ns);
      out.push_back(std::move(s));
    }
  }
  for (const std::string& name : stopped_elsewhere_) {
    agent_status s;
    s.name = name;
    s.in_policy = false;
    s.stopped = true;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace airlock::filters::rate_limit
