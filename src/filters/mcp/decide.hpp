#pragma once
// One JSON-RPC message against a rule's `mcp` section, and the answers a refusal gets. Kept
// apart from the filter so that unit tests (and the fuzz target) drive it without an exchange.
//
// Error codes (JSON-RPC 2.0 section 5.1 reserves -32768..-32000; -32099..-32000 are for the
// implementation, here the policy's refusals; docs/policy.md lists them):
//   -32700  parse error: the body is not JSON                       (HTTP 400)
//   -32600  invalid request: not a JSON-RPC 2.0 message             (HTTP 400)
//   -32601  method not allowed by the rule's `mcp.methods`
//   -32602  invalid params: tools/call without a tool name, or arguments breaking their rules
//   -32001  tool not allowed by the rule's `mcp.tools`
//   -32002  a secret or sensitive data in the arguments (DLP)
//   -32003  not sent: another message of the same batch was refused
//   -32004  the tool's rate limit or quota (answered by the filter)
//   -32005  the tool's description changed from its pin or carries a prompt injection
//           (listing.hpp; answered by the filter)
//   -32006  the server's answer to a listing could not be read and was withheld (listing.hpp;
//           in place of that answer)

#include "core/errc.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/exchange.hpp"
#include "filters/mcp/jsonrpc.hpp"
#include "policy/mcp_compiler.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::mcp {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotAllowed = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kToolNotAllowed = -32001;
inline constexpr int kSensitiveData = -32002;
inline constexpr int kBatchRefused = -32003;
inline constexpr int kToolRateLimited = -32004;
inline constexpr int kToolChanged = -32005;
inline constexpr int kListingWithheld = -32006;

struct refusal {
  int code = 0;
  core::errc reason = core::errc::ok;
  std::string message;  // names and constraints only, never an argument's value
};

// What the policy says about one message.
struct call_decision {
  std::optional<refusal> refused;
  // Bounded labels (exchange_record::mcp_call): a name the policy lists (pointing into
  // `policy`), a method of the MCP specification, "other", "response" or "-".
  std::string_view method = "-";
  std::string_view tool = "-";
  const policy::compiled_mcp_tool* listed_tool = nullptr;  // tools/call of a listed tool
  dlp::findings found;                                     // in the arguments
};

// Decides `m`: method, tool, argument constraints, then (when `scan` is given) the DLP classes
// in every string and key of the arguments. Findings are returned; `block_findings` says
// whether they refuse the call (the rule's DLP action).
call_decision decide(const policy::compiled_mcp& policy, const message& m, const dlp::scanner* scan,
                     bool block_findings);

// The JSON-RPC error object answering request `id` (JSON text; "null" when none).
std::string error_object(std::string_view id, const refusal& r);

// The answer to a refused body: JSON-RPC errors for its requests, or nothing when no message
// of it can be answered (notifications and responses only: the proxy's 403 then, as streamable
// HTTP has it). `refusals[i]` is the i-th message's own refusal; in a batch the others get
// kBatchRefused.
std::optional<protocol_answer> answer_for(const parsed_body& body,
                                          const std::vector<std::optional<refusal>>& refusals);

}  // namespace airlock::filters::mcp
