#pragma once
// The YAML policy parser's own class, shared by the files that read its sections (parser.cpp:
// the policy, listen, limits, rates, secrets, agents and rules; parser_checks.cpp: a rule's
// request checks, credentials and redaction). Not an interface: load_string and load_file
// (parser.hpp) are.

#include "core/str_cat.hpp"
#include "policy/error_sink.hpp"
#include "policy/model.hpp"
#include "policy/parser.hpp"
#include "policy/yaml_map.hpp"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::policy::detail {

using key_list = std::span<const std::string_view>;

bool contains(key_list list, std::string_view key);
std::string join(const std::string& path, std::string_view key);
// What a node is, for "expected X, got Y".
std::string_view describe(const YAML::Node& n);
// A node as YAML again, for model::rule::source and model::agent::source: equal texts mean
// equal rules. Layout and comments are gone; a change of style (flow to block) still counts.
std::string emitted(const YAML::Node& node);

// The longest any duration in the policy may be (each key may set a shorter bound): 24 hours
// is already far past any sensible timeout, and it keeps every timer's arithmetic in range.
inline constexpr std::chrono::milliseconds max_duration{24 * 3600 * 1000};
// "24h", "90s", "250ms": a duration as the policy would write it.
std::string duration_text(std::chrono::milliseconds d);

class parser {
 public:
  parser(std::string base_dir, mark_table& marks, error_sink& errors)
      : base_dir_(std::move(base_dir)), marks_(marks), errors_(errors) {}

  void policy(const YAML::Node& root, model::policy& p);
  // An included file (`include:`): its `rules` are appended to the policy's, and its `agents`
  // (each with `rules` only) add rule names to agents the policy already has. `path` names the
  // file's entries in errors ("include[0]"). parser_approvals.cpp.
  void included(const YAML::Node& root, const std::string& path, model::policy& p);

 private:
  void error(const YAML::Node& at, const std::string& key, std::string message) {
    errors_.add(to_mark(at.Mark()), key, std::move(message));
  }

  // Calls f(key, value, path) for each entry of a mapping whose key is known; reports unknown,
  // unsupported, duplicate and non-string keys.
  template <typename F>
  void entries(const YAML::Node& map, const std::string& path, key_list known, key_list unsupported,
               F&& f);

  bool expect(const YAML::Node& n, const std::string& key, YAML::NodeType::value type,
              std::string_view what) {
    if (n.Type() == type) return true;
    error(n, key, core::str_cat("expected ", what, ", got ", describe(n)));
    return false;
  }

  std::optional<std::string> string(const YAML::Node& n, const std::string& key) {
    if (!expect(n, key, YAML::NodeType::Scalar, "a string")) return std::nullopt;
    return n.Scalar();
  }
  void string_into(const YAML::Node& n, const std::string& key, std::string& out) {
    if (auto s = string(n, key)) out = std::move(*s);
  }
  void path_into(const YAML::Node& n, const std::string& key, std::string& out);
  void strings_into(const YAML::Node& n, const std::string& key, std::vector<std::string>& out);
  // A list of DNS host names (RFC 1123 section 2.1), lowercased; IP literals, ports and
  // wildcards are errors.
  void host_names_into(const YAML::Node& n, const std::string& key, std::vector<std::string>& out);
  void bool_into(const YAML::Node& n, const std::string& key, bool& out);
  std::optional<std::uint64_t> integer(const YAML::Node& n, const std::string& key,
                                       std::uint64_t min, std::uint64_t max);
  void size_into(const YAML::Node& n, const std::string& key, std::uint64_t& out,
                 std::uint64_t min);
  // Every duration key has an upper bound (max_duration unless it says otherwise): a timeout
  // written as "never" (a huge number) would otherwise overflow when it becomes a timer.
  void duration_into(const YAML::Node& n, const std::string& key, std::chrono::milliseconds& out,
                     std::chrono::milliseconds min, std::chrono::milliseconds max = max_duration);
  std::optional<model::mode> mode(const YAML::Node& n, const std::string& key);

  void limits(const YAML::Node& n, const std::string& path, model::limits& l);
  void rate(const YAML::Node& n, const std::string& path, model::rate& r);
  void protocols(const YAML::Node& n, const std::string& key, std::uint8_t& out);
  void websocket(const YAML::Node& n, const std::string& path, model::websocket_limits& w);
  void breaker(const YAML::Node& n, const std::string& path, model::breaker& b);
  void query(const YAML::Node& n, const std::string& path, model::query_checks& q);
  void headers(const YAML::Node& n, const std::string& path, model::header_checks& h);
  void body(const YAML::Node& n, const std::string& path, model::body_checks& b);
  void json_field(const YAML::Node& n, const std::string& path, model::json_field& f);
  // A mapping of names to re2 patterns ('' or null = any value), in file order.
  void pattern_map(const YAML::Node& n, const std::string& path,
                   std::vector<std::pair<std::string, std::string>>& out);
  // One entry of a name -> value mapping: a non-empty scalar name, not already in `out`; sets
  // `key` (path.name) and its mark. False (with the error recorded) to skip the entry.
  bool named_entry(const YAML::Node& name_node, const std::string& path,
                   const std::vector<std::pair<std::string, std::string>>& out, std::string& key);
  std::optional<double> number(const YAML::Node& n, const std::string& key);
  // A mapping of names to templates (strings), in file order.
  void template_map(const YAML::Node& n, const std::string& path,
                    std::vector<std::pair<std::string, std::string>>& out);
  void inject(const YAML::Node& n, const std::string& path, model::inject& in);
  // parser_mcp.cpp
  void mcp(const YAML::Node& n, const std::string& path, model::mcp_config& m);
  void mcp_tool(const YAML::Node& n, const std::string& path, model::mcp_tool& t);
  void json_fields(const YAML::Node& n, const std::string& path,
                   std::vector<model::json_field>& out);
  void redact(const YAML::Node& n, const std::string& path, model::redact& r);
  void ports(const YAML::Node& n, const std::string& path, std::vector<model::port_range>& out);
  void schemes(const YAML::Node& n, const std::string& path, std::vector<model::scheme>& out);
  void secrets(const YAML::Node& n, const std::string& path, std::vector<model::secret>& out);
  void redactors(const YAML::Node& n, const std::string& path, std::vector<model::redactor>& out);
  void agents(const YAML::Node& n, const std::string& path, std::vector<model::agent>& out);
  // `first` numbers the entries (rules[first], ...): an included file's rules follow the
  // policy's own, and the compiler finds their marks under those keys.
  void rules(const YAML::Node& n, const std::string& path, std::vector<model::rule>& out,
             std::size_t first = 0);
  // `approvals:` and a rule's `ask` (parser_approvals.cpp).
  void approvals(const YAML::Node& n, const std::string& path, model::approvals& a);
  void ask(const YAML::Node& n, const std::string& path, model::ask& a);
  void operators(const YAML::Node& n, const std::string& path,
                 std::vector<model::operator_token>& out);
  // A file name relative to the policy's folder made absolute (as written when base_dir is "").
  std::string resolve(std::string file) const;

  std::string base_dir_;
  mark_table& marks_;
  error_sink& errors_;
};

template <typename F>
void parser::entries(const YAML::Node& map, const std::string& path, key_list known,
                     key_list unsupported, F&& f) {
  if (!expect(map, path, YAML::NodeType::Map, "a mapping")) return;
  std::vector<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (errors_.full()) return;
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    if (!key_node.IsScalar()) {
      error(key_node, path, "keys must be strings");
      continue;
    }
    const std::string& key = key_node.Scalar();
    const std::string child = join(path, key);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      // yaml-cpp keeps both entries of a duplicated key; which one wins would be a guess.
      error(key_node, child, core::str_cat("duplicate key '", key, "'"));
      continue;
    }
    seen.push_back(key);
    if (contains(unsupported, key)) {
      error(key_node, child, core::str_cat("'", key, "' is not supported yet"));
      continue;
    }
    if (!contains(known, key)) {
      std::string message = core::str_cat("unknown key '", key, "'");
      std::string_view best;
      std::size_t best_distance = 3;
      for (std::string_view k : known) {
        const std::size_t d = edit_distance(key, k);
        if (d < best_distance) {
          best = k;
          best_distance = d;
        }
      }
      if (!best.empty()) message += core::str_cat("; did you mean '", best, "'?");
      error(key_node, child, std::move(message));
      errors_.note_unknown_key_in(path);
      continue;
    }
    // A null value ("key:" alone) has no position of its own in some cases; use the key's.
    const model::mark at = to_mark(value.Mark());
    marks_.set(child, at.line > 0 ? at : to_mark(key_node.Mark()));
    f(key, value, child);
  }
}

}  // namespace airlock::policy::detail
