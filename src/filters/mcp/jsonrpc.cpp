#include "filters/mcp/jsonrpc.hpp"

#include "filters/validation/json_body.hpp"

#include <boost/json/serialize.hpp>

#include <exception>

namespace airlock::filters::mcp {
namespace {

namespace json = boost::json;

// JSON-RPC 2.0 section 4: an id is a string, a number or null; MCP (basic, "Requests") narrows
// it to a string or an integer, never null. Numbers with a fraction are refused too (the spec
// says they SHOULD NOT be used), so the id is echoed exactly as sent.
bool usable_id(const json::value& id) {
  return id.is_string() || id.is_int64() || id.is_uint64();
}

message read_message(const json::value& v) {
  message m;
  if (!v.is_object()) {
    m.invalid_why = "a message must be an object";
    return m;
  }
  const json::object& o = v.get_object();
  const json::value* id = o.if_contains("id");
  if (id != nullptr && usable_id(*id)) m.id = json::serialize(*id);
  const json::value* version = o.if_contains("jsonrpc");
  if (version == nullptr || !version->is_string() || version->get_string() != "2.0") {
    m.invalid_why = "\"jsonrpc\" must be \"2.0\"";
    return m;
  }
  if (id != nullptr && !usable_id(*id)) {
    m.invalid_why = "\"id\" must be a string or an integer";
    return m;
  }
  const json::value* method = o.if_contains("method");
  if (method == nullptr) {
    const bool result = o.contains("result");
    const bool error = o.contains("error");
    if (id == nullptr || result == error) {
      m.invalid_why = "a message needs a method, or an id and one of result and error";
      return m;
    }
    m.kind = message_kind::response;
    return m;
  }
  if (!method->is_string()) {
    m.invalid_why = "\"method\" must be a string";
    return m;
  }
  if (o.contains("result") || o.contains("error")) {
    m.invalid_why = "a request cannot carry result or error";
    return m;
  }
  m.method = method->get_string();
  const json::value* params = o.if_contains("params");
  if (params != nullptr && !params->is_object() && !params->is_array()) {
    m.invalid_why = "\"params\" must be an object or an array";
    return m;
  }
  m.kind = id != nullptr ? message_kind::request : message_kind::notification;
  if (m.method != "tools/call" || params == nullptr || !params->is_object()) return m;
  const json::object& p = params->get_object();
  if (const json::value* name = p.if_contains("name"); name != nullptr && name->is_string()) {
    m.tool = name->get_string();
    m.tool_named = true;
  }
  if (const json::value* args = p.if_contains("arguments"); args != nullptr) {
    if (args->is_object())
      m.arguments = &args->get_object();
    else
      m.arguments_malformed = true;
  }
  return m;
}

}  // namespace

parsed_body parse_jsonrpc(std::string_view body, std::size_t max_batch) {
  parsed_body out;
  try {
    if (validation::parse_json(body, {}, out.root)) {
      out.error = "the body is not valid JSON";
      out.error_code = -32700;  // Parse error
      return out;
    }
    if (out.root.is_array()) {
      const json::array& a = out.root.get_array();
      out.batch = true;
      if (a.empty() || a.size() > max_batch) {
        out.error = a.empty() ? "an empty batch" : "too many messages in one batch";
        out.error_code = -32600;  // Invalid Request
        return out;
      }
      out.messages.reserve(a.size());
      for (const auto& v : a)
        out.messages.push_back(read_message(v));
      return out;
    }
    if (!out.root.is_object()) {
      out.error = "the body is neither a JSON-RPC message nor a batch";
      out.error_code = -32600;
      return out;
    }
    out.messages.push_back(read_message(out.root));
  } catch (const std::exception&) {
    // Out of memory building the document: refuse rather than forward it unread.
    out.messages.clear();
    out.error = "the body could not be read";
    out.error_code = -32700;
  }
  return out;
}

std::string json_quote(std::string_view s) {
  return json::serialize(json::string_view(s.data(), s.size()));
}

}  // namespace airlock::filters::mcp
