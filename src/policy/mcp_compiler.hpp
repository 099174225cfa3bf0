#pragma once
// A rule's `mcp` section (mcp.hpp) compiled once per policy load: methods sorted for lookup,
// each tool's argument constraints built like a JSON body's (checks_compiler.hpp).
// src/filters/mcp applies it.

#include "policy/checks.hpp"
#include "policy/checks_compiler.hpp"
#include "policy/mcp.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

struct compiled_mcp_tool {
  std::string name;
  std::vector<compiled_json_field> arguments;
  model::rate rate;  // requests, per, burst, requests_per_hour (0 = none)
};

struct compiled_mcp {
  bool active = false;               // the rule has `mcp`
  std::vector<std::string> methods;  // sorted; empty = any
  bool tools_listed = false;         // only `tools` may be called
  std::vector<compiled_mcp_tool> tools;
  bool scan_arguments = true;
  std::uint64_t max_body_bytes = 0;
  std::uint32_t max_batch = 0;
  bool filter_lists = true;
  std::vector<std::pair<std::string, std::string>> pins;  // tool name -> lower-case hex
  bool learn_pins = false;
  std::string pins_file;  // learned pins kept here (empty: in memory only)
  bool report_changes = false;
  bool scan_descriptions = true;
  std::uint64_t max_response_bytes = 0;

  // The pin the policy gives `tool`, or null.
  const std::string* pin_of(std::string_view tool) const noexcept {
    for (const auto& [name, pin] : pins)
      if (name == tool) return &pin;
    return nullptr;
  }

  bool allows_method(std::string_view m) const noexcept {
    return methods.empty() || std::binary_search(methods.begin(), methods.end(), m);
  }
  // Whether the policy names `m` (a bounded metric label).
  bool lists_method(std::string_view m) const noexcept {
    return std::binary_search(methods.begin(), methods.end(), m);
  }
  // The tool of that name, or null (then a call is refused when tools_listed).
  const compiled_mcp_tool* find_tool(std::string_view name) const noexcept {
    for (const auto& t : tools)
      if (t.name == name) return &t;
    return nullptr;
  }
};

// Errors: an empty or duplicated method name; a tool's argument constraints as a body's
// (keys "mcp.tools.NAME.arguments.FIELD"); a pin that is not 64 hex digits.
compiled_mcp compile_mcp(const model::mcp_config& in, const check_error& error);

}  // namespace airlock::policy
