#pragma once
// Rate limits and quotas per MCP tool (`rules[i].mcp.tools.NAME.rate`, issue 22): the same
// buckets as a rule's (rate_limits.hpp, GCRA), one per agent, rule and tool, kept by the
// registry so that a reload keeps their levels like it keeps a rule's. Checked by the MCP
// filter (filters/mcp) for each tools/call it lets through.
//
// Under `state: redis` a tool's buckets stay local to each replica, holding 1/replicas of the
// limits (like on_unavailable: local): a tool call is decided inside a held body, where the
// filter cannot wait for a lease.
//
// @par Thread Safety
// Immutable after the registry built it; admit() may be called concurrently (the buckets are
// lock-free).

#include "filters/rate_limit/plan.hpp"
#include "filters/rate_limit/rate_limits.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace airlock::filters::rate_limit {

class tool_limits {
 public:
  struct tool_entry {
    std::string name;
    rate_limits limits;                   // as written, or limits / replicas under state: redis
    std::shared_ptr<bucket_state> state;  // null: no limit on this tool
  };
  struct rule_tools {
    std::string rule;
    std::vector<tool_entry> tools;  // by the rule's compiled_mcp tool index
  };
  struct agent_tools {
    std::string agent;
    std::vector<rule_tools> rules;  // by compiled_rule::index (empty when none has tool limits)
  };

  tool_limits(std::vector<agent_tools> agents, std::shared_ptr<const void> keep_alive)
      : agents_(std::move(agents)), keep_alive_(std::move(keep_alive)) {}

  // One call of tool `tool` (its index in the rule's mcp.tools) by agent `agent_index` (its
  // position in snapshot::agents()) under rule `rule_index`: its hourly quota, then its request
  // bucket. Refused: quota_exceeded or rate_limited, with the retry time and the limit named
  // ("tool echo (rule mcp, agent coder) requests_per_minute=10"); nothing taken then.
  admission admit(std::size_t agent_index, std::size_t rule_index, std::size_t tool,
                  std::int64_t now_ns) const;

  bool any() const noexcept { return !agents_.empty(); }

 private:
  std::vector<agent_tools> agents_;  // empty when no tool has a limit
  std::shared_ptr<const void> keep_alive_;
};

}  // namespace airlock::filters::rate_limit
