#pragma once
// `airlock explain --body FILE` (src/app/cmd_explain.cpp): how a rule's `mcp` section decides a
// JSON-RPC body, in words: each message's kind and method, for tools/call the tool and whether
// the policy lists it, the argument constraints and which one decided, the DLP classes found,
// and the answer the agent would get. The same decide() the filter runs; no rate limit is
// taken (explain keeps no buckets).

#include "filters/dlp/scanner.hpp"
#include "policy/mcp_compiler.hpp"

#include <string>
#include <string_view>

namespace airlock::filters::mcp {

struct body_explanation {
  bool allowed = false;
  std::string text;  // lines ending in '\n'
};

// `scan`: the rule's DLP scanner for the arguments (null: not scanned); `block`: whether a
// finding refuses (the rule's DLP action).
body_explanation explain_body(const policy::compiled_mcp& policy, const dlp::scanner* scan,
                              bool block, std::string_view body);

}  // namespace airlock::filters::mcp
