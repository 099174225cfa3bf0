#include "filters/mcp/decide.hpp"

#include "core/str_cat.hpp"
#include "filters/validation/json_body.hpp"
#include "filters/validation/text.hpp"

#include <array>

namespace airlock::filters::mcp {
namespace {

namespace json = boost::json;

// The methods of the MCP specification (2025-06-18, schema.ts) a client sends: labels that
// need no listing in the policy to be named in a metric.
constexpr std::array<std::string_view, 19> kKnownMethods = {
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "elicitation/create",
    "sampling/createMessage",
};

std::string_view method_label(const policy::compiled_mcp& p, std::string_view method) {
  const auto it = std::lower_bound(p.methods.begin(), p.methods.end(), method);
  if (it != p.methods.end() && *it == method) return *it;
  for (std::string_view k : kKnownMethods)
    if (k == method) return k;
  return "other";
}

constexpr std::string_view kArguments = "mcp-arguments";

// Every key and string in `v`, read by the DLP scanner (each class once per location); the
// strings are also collected, in document order, for read_pairs.
void scan_value(const json::value& v, const dlp::scanner& scan, dlp::findings& out,
                std::vector<std::string_view>& strings) {
  switch (v.kind()) {
    case json::kind::string:
      scan.scan(v.get_string(), dlp::scanner::kind::body, kArguments, out);
      strings.push_back(v.get_string());
      break;
    case json::kind::object:
      for (const auto& kv : v.get_object()) {
        scan.scan(kv.key(), dlp::scanner::kind::body, kArguments, out);
        scan_value(kv.value(), scan, out, strings);
      }
      break;
    case json::kind::array:
      for (const auto& e : v.get_array())
        scan_value(e, scan, out, strings);
      break;
    default:
      break;
  }
}

// A secret split across two neighbouring arguments ({"key": "AKIAIOSFODNN", "suffix":
// "7EXAMPLE"}): each adjacent pair of strings joined, read for the classes only, as the scanner
// reads a query's values joined (decoding a concatenation would find what neither holds).
void read_pairs(const std::vector<std::string_view>& strings, const dlp::scanner& scan,
                dlp::findings& out) {
  std::string joined;
  redaction::hit_counts hits;
  for (std::size_t i = 0; i + 1 < strings.size(); ++i) {
    joined.assign(strings[i]);
    joined.append(strings[i + 1]);
    hits.clear();
    (void)scan.engine().redact(joined, &hits);
    for (std::size_t h = 0; h < hits.size(); ++h)
      if (hits[h] != 0) dlp::add_finding(out, scan.engine().label_name(h), kArguments);
  }
}

refusal refuse(int code, core::errc why, std::string message) {
  return {code, why, std::move(message)};
}

}  // namespace

call_decision decide(const policy::compiled_mcp& p, const message& m, const dlp::scanner* scan,
                     bool block_findings) {
  call_decision d;
  switch (m.kind) {
    case message_kind::invalid:
      d.refused = refuse(kInvalidRequest, core::errc::mcp_invalid,
                         core::str_cat("invalid JSON-RPC message: ", m.invalid_why));
      return d;
    case message_kind::response:
      // The client's answer to a request of the server (sampling, elicitation, roots).
      d.method = "response";
      return d;
    case message_kind::request:
    case message_kind::notification:
      break;
  }
  d.method = method_label(p, m.method);
  if (!p.allows_method(m.method)) {
    d.refused = refuse(kMethodNotAllowed, core::errc::mcp_method_denied,
                       core::str_cat("method '", validation::printable(m.method),
                                     "' is not allowed by the policy"));
    return d;
  }
  if (m.method != "tools/call") return d;
  d.tool = "other";
  if (!m.tool_named) {
    d.refused = refuse(kInvalidParams, core::errc::mcp_params_denied,
                       "tools/call needs params.name (a string)");
    return d;
  }
  d.listed_tool = p.find_tool(m.tool);
  if (d.listed_tool != nullptr) d.tool = d.listed_tool->name;
  const std::string tool = validation::printable(m.tool);
  if (d.listed_tool == nullptr && p.tools_listed) {
    d.refused = refuse(kToolNotAllowed, core::errc::mcp_tool_denied,
                       core::str_cat("tool '", tool, "' is not allowed by the policy"));
    return d;
  }
  if (m.arguments_malformed) {
    d.refused = refuse(kInvalidParams, core::errc::mcp_params_denied,
                       core::str_cat("tool '", tool, "': params.arguments must be an object"));
    return d;
  }
  if (d.listed_tool != nullptr && !d.listed_tool->arguments.empty()) {
    const json::object none;
    const json::object& args = m.arguments != nullptr ? *m.arguments : none;
    if (auto broken = validation::check_fields(d.listed_tool->arguments, args)) {
      // "body field 'path' breaks pattern ..." -> "tool 'x': argument 'path' breaks pattern ..."
      std::string why = broken->detail();
      if (why.starts_with("body field ")) why = "argument " + why.substr(11);
      d.refused = refuse(kInvalidParams, core::errc::mcp_params_denied,
                         core::str_cat("tool '", tool, "': ", why));
      return d;
    }
  }
  if (scan != nullptr && m.arguments != nullptr) {
    std::vector<std::string_view> strings;
    for (const auto& kv : *m.arguments) {
      scan->scan(kv.key(), dlp::scanner::kind::body, kArguments, d.found);
      scan_value(kv.value(), *scan, d.found, strings);
    }
    read_pairs(strings, *scan, d.found);
    if (!d.found.empty() && block_findings) {
      std::string classes;
      for (const auto& f : d.found)
        if (classes.size() < 160) classes += core::str_cat(classes.empty() ? "" : ", ", f.cls);
      d.refused = refuse(kSensitiveData, core::errc::dlp_blocked,
                         core::str_cat("tool '", tool, "': the arguments carry ", classes));
    }
  }
  return d;
}

std::string error_object(std::string_view id, const refusal& r) {
  return core::str_cat(R"({"jsonrpc":"2.0","id":)", id.empty() ? std::string_view("null") : id,
                       R"(,"error":{"code":)", r.code, R"(,"message":)",
                       json_quote(core::str_cat("airlock: ", r.message)), R"(,"data":{"reason":)",
                       json_quote(core::name(r.reason)), "}}}");
}

std::optional<protocol_answer> answer_for(const parsed_body& body,
                                          const std::vector<std::optional<refusal>>& refusals) {
  if (body.error) {
    // JSON-RPC 2.0 section 5: an error that cannot be tied to a request has id null.
    const refusal r{body.error_code, core::errc::mcp_invalid, std::string(*body.error)};
    return protocol_answer{400, "application/json", error_object({}, r)};
  }
  std::vector<std::string> answers;
  const refusal others{kBatchRefused, core::errc::mcp_invalid,
                       "not sent: another message of this batch was refused"};
  for (std::size_t i = 0; i < body.messages.size(); ++i) {
    const message& m = body.messages[i];
    // Notifications and responses get no answer (JSON-RPC 2.0 section 4.1); an invalid message
    // does, with id null when it has no usable one (section 5).
    if (m.kind == message_kind::notification || m.kind == message_kind::response) continue;
    const refusal& r = i < refusals.size() && refusals[i] ? *refusals[i] : others;
    answers.push_back(error_object(m.id, r));
  }
  if (answers.empty()) return std::nullopt;
  const bool invalid_only = !body.batch && body.messages[0].kind == message_kind::invalid;
  protocol_answer a{invalid_only ? 400u : 200u, "application/json", {}};
  if (!body.batch) {
    a.body = std::move(answers[0]);
    return a;
  }
  a.body = "[";
  for (std::size_t i = 0; i < answers.size(); ++i)
    a.body += core::str_cat(i ? "," : "", answers[i]);
  a.body += "]";
  return a;
}

}  // namespace airlock::filters::mcp
