#include "filters/rate_limit/tool_limits.hpp"

#include "core/str_cat.hpp"

namespace airlock::filters::rate_limit {

admission tool_limits::admit(std::size_t agent_index, std::size_t rule_index, std::size_t tool,
                             std::int64_t now_ns) const {
  admission a;
  if (agent_index >= agents_.size()) return a;
  const agent_tools& ag = agents_[agent_index];
  if (rule_index >= ag.rules.size()) return a;
  const rule_tools& rt = ag.rules[rule_index];
  if (tool >= rt.tools.size() || !rt.tools[tool].state) return a;
  const tool_entry& te = rt.tools[tool];
  bucket_state& b = *te.state;
  const auto refuse = [&](core::errc why, std::int64_t retry_ns, std::string limit) {
    a.error = why;
    a.retry_after_ns = std::max<std::int64_t>(retry_ns, 0);
    a.retry_after_seconds = seconds_ceil(a.retry_after_ns);
    a.limit = core::str_cat("tool ", te.name, " (rule ", rt.rule, ", agent ", ag.agent, ") ",
                            std::move(limit));
    return std::move(a);
  };
  const gcra_params& hour = te.limits.requests_per_hour;
  bool took_hour = false;
  if (hour.enabled()) {
    const auto r = b.requests_per_hour.try_acquire(hour, now_ns);
    if (!r.allowed)
      return refuse(core::errc::quota_exceeded, r.retry_after_ns,
                    core::str_cat("requests_per_hour=", te.limits.source.requests_per_hour));
    took_hour = true;
  }
  if (te.limits.requests.enabled()) {
    const auto r = b.requests.try_acquire(te.limits.requests, now_ns);
    if (!r.allowed) {
      if (took_hour) b.requests_per_hour.refund(hour);  // a refusal consumes nothing
      return refuse(core::errc::rate_limited, r.retry_after_ns, te.limits.requests_label());
    }
  }
  return a;
}

}  // namespace airlock::filters::rate_limit
