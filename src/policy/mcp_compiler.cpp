#include "policy/mcp_compiler.hpp"

#include "core/str_cat.hpp"

namespace airlock::policy {

compiled_mcp compile_mcp(const model::mcp_config& in, const check_error& error) {
  compiled_mcp out;
  if (!in.present) return out;
  out.active = true;
  out.scan_arguments = in.scan_arguments;
  out.max_body_bytes = in.max_body_bytes;
  out.max_batch = in.max_batch;
  out.tools_listed = in.tools_listed;
  for (std::size_t i = 0; i < in.methods.size(); ++i) {
    const std::string& m = in.methods[i];
    const std::string key = core::str_cat("mcp.methods[", i, "]");
    if (std::find(out.methods.begin(), out.methods.end(), m) != out.methods.end())
      error(key, core::str_cat("method '", m, "' is listed twice"));
    else
      out.methods.push_back(m);
  }
  std::sort(out.methods.begin(), out.methods.end());
  out.filter_lists = in.filter_lists;
  out.learn_pins = in.learn_pins || !in.pins_file.empty();
  out.pins_file = in.pins_file;
  out.report_changes = in.report_changes;
  out.scan_descriptions = in.scan_descriptions;
  out.max_response_bytes = in.max_response_bytes;
  for (const auto& [name, pin] : in.pins) {
    std::string hex = pin;
    for (char& ch : hex)
      if (ch >= 'A' && ch <= 'F') ch = static_cast<char>(ch - 'A' + 'a');
    if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
      error(core::str_cat("mcp.pins.", name), "expected 64 hex digits (a SHA-256)");
      continue;
    }
    out.pins.emplace_back(name, std::move(hex));
  }
  for (const auto& t : in.tools) {
    compiled_mcp_tool c;
    c.name = t.name;
    c.arguments =
        compile_json_fields(t.arguments, core::str_cat("mcp.tools.", t.name, ".arguments."), error);
    c.rate = t.rate;
    out.tools.push_back(std::move(c));
  }
  return out;
}

}  // namespace airlock::policy
