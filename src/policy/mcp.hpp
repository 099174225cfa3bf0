#pragma once
// MCP (Model Context Protocol) tool calls as policy (issue 22): a rule's `mcp` key, as the
// policy writes it. JSON-RPC 2.0 messages POSTed over MCP's "streamable HTTP" transport
// (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports) are decided one
// by one: the methods allowed, for `tools/call` the tools allowed by name and each tool's
// argument constraints (written like a JSON body's fields, model.hpp json_field). Kept out of
// model.hpp so the section has one home (parser: parser_mcp.cpp; compiled: mcp_compiler.hpp;
// applied: src/filters/mcp; docs: docs/policy.md "mcp").

#include "policy/model_basics.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy::model {

// One tool the agent may call (`mcp.tools.NAME`).
struct mcp_tool {
  std::string name;
  // Constraints on `params.arguments`, by dotted path from the arguments object.
  std::vector<json_field> arguments;
  // Calls of this tool per agent (requests_per_second/minute, burst, requests_per_hour); only
  // these keys of a rate apply here.
  model::rate rate;
  mark at;
};

struct mcp_config {
  bool present = false;  // the rule has an `mcp` key
  // JSON-RPC methods allowed ("initialize", "tools/call", "notifications/initialized", ...);
  // empty = any method.
  std::vector<std::string> methods;
  bool tools_listed = false;    // `tools` is written: only the tools listed may be called
  std::vector<mcp_tool> tools;  // in file order
  // The DLP scanners read every string of a call's arguments (the rule's `dlp` classes, else
  // the default set).
  bool scan_arguments = true;
  std::uint64_t max_body_bytes = 1024 * 1024;  // a POST's body is held whole up to this
  std::uint32_t max_batch = 32;                // messages in one JSON-RPC batch
  // tools/list, resources/list and prompts/list answers filtered to what the agent may call.
  bool filter_lists = true;
  // Tool descriptions and input schemas pinned: tool name -> lower-case hex SHA-256
  // (filters/mcp/listing.hpp tool_pin); `pins: learn` pins each tool on first sight instead.
  std::vector<std::pair<std::string, std::string>> pins;
  bool learn_pins = false;
  // `pins_file`: pins learned on first sight are kept in this file (JSON lines {rule, tool,
  // sha256}), read when the policy loads and appended to as tools are first listed.
  std::string pins_file;
  bool report_changes = false;    // `on_change: report`: a changed tool is recorded, not dropped
  bool scan_descriptions = true;  // the prompt-injection scanner reads tool descriptions
  std::uint64_t max_response_bytes = 4 * 1024 * 1024;  // a listing answer (or SSE event) held
};

}  // namespace airlock::policy::model
