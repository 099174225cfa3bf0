#pragma once
// JSON-RPC 2.0 (https://www.jsonrpc.org/specification) as an MCP client POSTs it over
// "streamable HTTP" (MCP 2025-03-26 / 2025-06-18, basic/transports): one message, or a batch
// (an array; MCP 2025-03-26 allows them, 2025-06-18 dropped them, servers may still take them).
// A message is a request (method and id), a notification (method, no id) or a response to a
// server's request (result or error, and id). The body is parsed as strictly as the validation
// filter parses JSON bodies (no duplicate keys: which "name" a server reads would be a guess).
//
// @par Thread Safety
// Pure functions; a parsed_body is used by one exchange.

#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::mcp {

enum class message_kind { request, notification, response, invalid };

struct message {
  message_kind kind = message_kind::invalid;
  // The id as JSON text (`7`, `"a-1"`), for the answer; empty when there is none.
  std::string id;
  std::string_view method;  // requests and notifications
  // tools/call: params.name when a string (empty otherwise, see tool_named).
  std::string_view tool;
  bool tool_named = false;
  // tools/call: params.arguments when it is an object; null when absent or not an object.
  const boost::json::object* arguments = nullptr;
  bool arguments_malformed = false;  // present but not an object
  std::string_view invalid_why;      // kind invalid: what is wrong (a constant)
};

struct parsed_body {
  boost::json::value root;  // owns what the messages point into
  bool batch = false;
  std::vector<message> messages;
  // The body is not JSON (-32700) or not JSON-RPC at all (-32600): a constant naming why.
  std::optional<std::string_view> error;
  int error_code = 0;
};

// Parses `body`. A batch of more than `max_batch` messages, an empty batch, or a body that is
// not an object or array is an error; a single message of the wrong shape is one invalid
// message (answered with its id when it has a usable one).
parsed_body parse_jsonrpc(std::string_view body, std::size_t max_batch);

// The JSON text of a JSON string holding `s` (quotes, escapes), for answers.
std::string json_quote(std::string_view s);

}  // namespace airlock::filters::mcp
