#pragma once
// MCP tool calls as policy (issue 22). Under a rule with `mcp` (policy/mcp.hpp), a POST's body
// is held whole (up to mcp.max_body_bytes) and read as JSON-RPC 2.0 (jsonrpc.hpp); each message
// is decided (decide.hpp): its method, for tools/call its tool and the tool's argument
// constraints, and the DLP classes in the arguments. One refused message refuses the body, a
// batch included (JSON-RPC has no way to send part of a batch on): requests are answered with
// JSON-RPC errors keeping their ids (HTTP 200), the other requests of a refused batch with
// -32003; a body of notifications and responses only gets the proxy's 403 (MCP streamable
// HTTP: an input the server cannot accept gets an HTTP error status). Other methods (GET opens
// the server's SSE stream, DELETE ends a session) pass to the rule's other checks.
//
// A call of a listed tool with a `rate` takes from that tool's buckets (per agent, rule and tool);
// an empty one refuses it with -32004 (rate_limited or quota_exceeded, Retry-After set).
//
// The answers to tools/list, resources/list and prompts/list requests are filtered to what the
// agent may call (listing.hpp), JSON or SSE; a tool whose description changed from its pin or
// carries a prompt injection is dropped and its calls refused with -32005 (or, with
// `on_change: report`, kept and recorded).
//
// Each message's method and tool go into the record (bounded labels) for the audit line and
// airlock_mcp_calls_total. Report mode (applied by the chain) lets refusals through, recorded.

#include "filters/filter.hpp"
#include "filters/redaction/redactor.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace airlock::policy {
class snapshot;
}

namespace airlock::filters::dlp {
struct dlp_plan;
class scanner;
}  // namespace airlock::filters::dlp

namespace airlock::filters::mcp {
class tool_memory;
}

namespace airlock::filters::rate_limit {
class tool_limits;
}

namespace airlock::filters::mcp {

// Each rule's scanner for tool arguments: its DLP scanner (and action), else one of the
// default classes that blocks.
struct mcp_plan {
  struct rule_plan {
    bool active = false;
    std::shared_ptr<const dlp::scanner> scan;  // null: arguments not scanned
    bool block = true;                         // a finding refuses the call
  };
  std::vector<rule_plan> rules;  // by compiled_rule::index
  bool any_rule = false;
  // Tools found changed or poisoned in listings, and learned pins (listing.hpp); for the
  // snapshot's lifetime.
  std::shared_ptr<tool_memory> memory;

  struct build_result {
    std::shared_ptr<const mcp_plan> plan;
    std::vector<std::string> errors;
  };
  // `retired`: rotated-out secret values (redaction/retired_secrets.hpp), refused in arguments
  // as the current ones are.
  static build_result build(const policy::snapshot& snapshot, const dlp::dlp_plan& dlp,
                            std::span<const redaction::literal_secret> retired = {});
};

class mcp_factory final : public filter_factory {
 public:
  // `tools`: the per-tool rate limits (rate_limit/tool_limits.hpp; the registry's buckets).
  mcp_factory(std::shared_ptr<const mcp_plan> plan,
              std::shared_ptr<const rate_limit::tool_limits> tools)
      : plan_(std::move(plan)), tools_(std::move(tools)) {}
  // Null for a CONNECT, and when no rule has `mcp`.
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::shared_ptr<const mcp_plan> plan_;
  std::shared_ptr<const rate_limit::tool_limits> tools_;
};

}  // namespace airlock::filters::mcp
