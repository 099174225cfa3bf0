// The MCP filter's reading of a POST body (src/filters/mcp: jsonrpc.*, decide.*) on any bytes:
// parsed as JSON-RPC 2.0 (one message or a batch), each message decided against a policy with
// listed methods, tools and argument constraints and the default DLP classes, then the answer
// built. Nothing may crash, read out of bounds or recurse without limit; and an answer, when
// there is one, must itself be valid JSON (a client parses it).

#include "filters/dlp/scanner.hpp"
#include "filters/mcp/decide.hpp"
#include "filters/mcp/jsonrpc.hpp"
#include "fuzz_input.hpp"
#include "policy/checks_compiler.hpp"
#include "policy/mcp_compiler.hpp"

#include <boost/json/parse.hpp>

#include <string>
#include <vector>

namespace airlock::fuzz {
namespace {

using policy::model::json_type;

const policy::compiled_mcp& mcp_policy() {
  static const policy::compiled_mcp p = [] {
    policy::model::mcp_config m;
    m.present = true;
    m.methods = {"initialize", "notifications/initialized", "tools/list", "tools/call"};
    m.tools_listed = true;
    policy::model::mcp_tool read;
    read.name = "read_file";
    policy::model::json_field path;
    path.path = "path";
    path.type = json_type::string;
    path.pattern = "/workspace/.*";
    path.required = true;
    policy::model::json_field depth;
    depth.path = "options.depth";
    depth.type = json_type::integer;
    depth.minimum = 0;
    depth.maximum = 8;
    read.arguments = {path, depth};
    policy::model::mcp_tool echo;
    echo.name = "echo";
    m.tools = {read, echo};
    bool ok = true;
    auto c = policy::compile_mcp(m, [&](const std::string&, std::string) { ok = false; });
    if (!ok) fail("fuzz mcp policy does not compile");
    return c;
  }();
  return p;
}

const filters::dlp::scanner& scanner() {
  static const auto s = filters::dlp::scanner::build({}).built;
  if (!s) fail("fuzz scanner does not build");
  return *s;
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace mcp = airlock::filters::mcp;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const mcp::parsed_body parsed = mcp::parse_jsonrpc(body, 8);
  std::vector<std::optional<mcp::refusal>> refusals(parsed.messages.size());
  for (std::size_t i = 0; i < parsed.messages.size(); ++i) {
    auto d = mcp::decide(airlock::fuzz::mcp_policy(), parsed.messages[i], &airlock::fuzz::scanner(),
                         true);
    refusals[i] = std::move(d.refused);
  }
  if (auto answer = mcp::answer_for(parsed, refusals)) {
    boost::json::error_code ec;
    (void)boost::json::parse(answer->body, ec);
    if (ec) airlock::fuzz::fail("the JSON-RPC answer is not JSON");
  }
  return 0;
}
