// A rule's `mcp` section (policy/mcp.hpp), read by the policy parser (parser_sections.hpp).
#include "policy/parser_sections.hpp"

#include <algorithm>
#include <limits>

namespace airlock::policy::detail {
namespace {

constexpr std::string_view mcp_keys[] = {
    "methods", "tools",     "scan_arguments",    "max_body_bytes",     "max_batch", "filter_lists",
    "pins",    "on_change", "scan_descriptions", "max_response_bytes", "pins_file"};
constexpr std::string_view mcp_tool_keys[] = {"arguments", "rate"};

}  // namespace

void parser::mcp(const YAML::Node& node, const std::string& path, model::mcp_config& m) {
  m.present = true;
  if (node.IsNull()) return;  // `mcp:` alone: JSON-RPC bodies checked, any method, any tool
  entries(node, path, mcp_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "methods") {
              strings_into(v, key, m.methods);
            } else if (k == "scan_arguments") {
              bool_into(v, key, m.scan_arguments);
            } else if (k == "max_body_bytes") {
              size_into(v, key, m.max_body_bytes, 1);
            } else if (k == "filter_lists") {
              bool_into(v, key, m.filter_lists);
            } else if (k == "scan_descriptions") {
              bool_into(v, key, m.scan_descriptions);
            } else if (k == "max_response_bytes") {
              size_into(v, key, m.max_response_bytes, 1);
            } else if (k == "on_change") {
              auto s = string(v, key);
              if (!s) return;
              if (*s == "refuse" || *s == "report")
                m.report_changes = *s == "report";
              else
                error(v, key, "expected refuse or report");
            } else if (k == "pins") {
              // `pins: learn`, or a mapping of tool names to SHA-256 hex.
              if (v.IsScalar() && v.Scalar() == "learn") {
                m.learn_pins = true;
                return;
              }
              if (v.IsMap()) {
                pattern_map(v, key, m.pins);
                return;
              }
              error(v, key, "expected learn, or a mapping of tool names to SHA-256 hex");
            } else if (k == "pins_file") {
              path_into(v, key, m.pins_file);
            } else if (k == "max_batch") {
              if (auto i = integer(v, key, 1, 1024)) m.max_batch = static_cast<std::uint32_t>(*i);
            } else if (k == "tools") {
              m.tools_listed = true;
              // A list of names, or a mapping of names to {arguments, rate} (or null).
              if (v.IsSequence()) {
                std::vector<std::string> names;
                strings_into(v, key, names);
                for (auto& n : names)
                  m.tools.push_back({std::move(n), {}, {}, to_mark(v.Mark())});
                return;
              }
              if (!expect(v, key, YAML::NodeType::Map, "a list or mapping of tool names")) return;
              for (auto it = v.begin(); it != v.end(); ++it) {
                if (errors_.full()) return;
                const YAML::Node name_node = it->first;
                if (!name_node.IsScalar() || name_node.Scalar().empty()) {
                  error(name_node, key, "tool names must be non-empty strings");
                  continue;
                }
                model::mcp_tool t;
                t.name = name_node.Scalar();
                t.at = to_mark(name_node.Mark());
                const std::string tkey = join(key, t.name);
                if (std::any_of(m.tools.begin(), m.tools.end(),
                                [&](const auto& o) { return o.name == t.name; })) {
                  error(name_node, tkey, core::str_cat("duplicate tool '", t.name, "'"));
                  continue;
                }
                marks_.set(tkey, t.at);
                mcp_tool(it->second, tkey, t);
                m.tools.push_back(std::move(t));
              }
            }
          });
  // Duplicates in a list of names (the mapping form reports them above).
  for (std::size_t i = 0; i < m.tools.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (m.tools[i].name == m.tools[j].name) {
        const std::string key = join(path, "tools");
        errors_.add(marks_.find(key), key, core::str_cat("duplicate tool '", m.tools[i].name, "'"));
        return;
      }
}

void parser::mcp_tool(const YAML::Node& node, const std::string& path, model::mcp_tool& t) {
  if (node.IsNull()) return;  // `name:` alone: the tool may be called with any arguments
  entries(node, path, mcp_tool_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "arguments") {
              json_fields(v, key, t.arguments);
            } else if (k == "rate") {
              rate(v, key, t.rate);
              const auto& r = t.rate;
              if (r.upload_bytes_per_second || r.download_bytes_per_second || r.concurrent ||
                  r.bytes_per_hour)
                error(v, key,
                      "a tool's rate takes requests_per_second, requests_per_minute, burst and "
                      "requests_per_hour only");
            }
          });
}

}  // namespace airlock::policy::detail
