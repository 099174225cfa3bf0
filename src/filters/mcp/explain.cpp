#include "filters/mcp/explain.hpp"

#include "core/str_cat.hpp"
#include "filters/mcp/decide.hpp"
#include "filters/mcp/jsonrpc.hpp"
#include "filters/validation/text.hpp"

namespace airlock::filters::mcp {
namespace {

std::string_view kind_name(message_kind k) {
  switch (k) {
    case message_kind::request:
      return "request";
    case message_kind::notification:
      return "notification";
    case message_kind::response:
      return "response";
    case message_kind::invalid:
      return "invalid message";
  }
  return "?";
}

// What the policy says about the message before the verdict: method and tool, listed or not,
// and the argument constraints that apply.
std::string describe(const policy::compiled_mcp& p, const message& m) {
  std::string out = core::str_cat("  ", kind_name(m.kind));
  if (m.kind != message_kind::request && m.kind != message_kind::notification) return out + "\n";
  out += core::str_cat(" ", validation::printable(m.method), " (method ",
                       p.methods.empty()           ? "allowed: the rule lists no methods"
                       : p.allows_method(m.method) ? "listed"
                                                   : "not listed",
                       ")");
  if (m.method != "tools/call" || !m.tool_named) return out + "\n";
  const auto* tool = p.find_tool(m.tool);
  out += core::str_cat(", tool '", validation::printable(m.tool), "' (",
                       tool != nullptr  ? "listed"
                       : p.tools_listed ? "not listed"
                                        : "allowed: the rule lists no tools",
                       ")\n");
  if (tool != nullptr && !tool->arguments.empty()) {
    out += "    argument rules:";
    for (const auto& f : tool->arguments)
      out += core::str_cat(" ", f.name, f.required ? " (required)" : "");
    out += "\n";
  }
  return out;
}

}  // namespace

body_explanation explain_body(const policy::compiled_mcp& policy, const dlp::scanner* scan,
                              bool block, std::string_view body) {
  body_explanation out;
  const parsed_body parsed = parse_jsonrpc(body, policy.max_batch);
  if (parsed.error) {
    out.text = core::str_cat("body: refused: mcp_invalid, JSON-RPC ", parsed.error_code, " (",
                             *parsed.error, ")\n");
    return out;
  }
  out.text = core::str_cat("body: ", parsed.batch ? "a batch of " : "", parsed.messages.size(),
                           parsed.messages.size() == 1 ? " message" : " messages", "\n");
  bool refused = false;
  for (std::size_t i = 0; i < parsed.messages.size(); ++i) {
    const message& m = parsed.messages[i];
    out.text += core::str_cat("message ", i + 1, ":\n", describe(policy, m));
    const call_decision d = decide(policy, m, scan, block);
    for (const auto& f : d.found)
      out.text += core::str_cat("    dlp: ", f.cls, " in the arguments (",
                                block ? "block" : "report", ")\n");
    if (d.refused) {
      refused = true;
      out.text += core::str_cat("    => refused: ", core::name(d.refused->reason), ", JSON-RPC ",
                                d.refused->code, " (", d.refused->message, ")\n");
    } else {
      out.text += "    => allowed\n";
    }
  }
  if (refused && parsed.batch)
    out.text += "body: refused (one refused message refuses the whole batch)\n";
  else
    out.text += refused ? "body: refused\n" : "body: allowed\n";
  out.allowed = !refused;
  return out;
}

}  // namespace airlock::filters::mcp
