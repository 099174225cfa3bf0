// The policy's `approvals:` section, a rule's `ask`, and the entries of an included file
// (`include:`), read by the same parser as the rest of the policy (parser_sections.hpp).

#include "core/str_cat.hpp"
#include "policy/parser_sections.hpp"
#include "policy/yaml_document.hpp"

#include <algorithm>
#include <limits>

namespace airlock::policy::detail {
namespace {

constexpr std::string_view approvals_keys[] = {"ask_unmatched",  "timeout", "max_held_per_agent",
                                               "max_held_total", "overlay", "access_requests"};
constexpr std::string_view ask_keys[] = {"timeout"};
constexpr std::string_view included_keys[] = {"rules", "agents"};
constexpr std::string_view included_agent_keys[] = {"rules"};
constexpr std::string_view operator_keys[] = {"token_sha256"};

// A held request ties up a connection and a little memory: a day is far beyond any person's
// answer, and keeps a typo ("120h" for "120s") from holding requests for ever.
constexpr std::chrono::milliseconds max_hold{24 * 3600 * 1000};

}  // namespace

void parser::approvals(const YAML::Node& node, const std::string& path, model::approvals& a) {
  using std::chrono::milliseconds;
  constexpr auto u32 = std::numeric_limits<std::uint32_t>::max();
  entries(node, path, approvals_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "ask_unmatched") {
              bool_into(v, key, a.ask_unmatched);
            } else if (k == "timeout") {
              duration_into(v, key, a.timeout, milliseconds(1), max_hold);
            } else if (k == "max_held_per_agent") {
              if (auto i = integer(v, key, 1, u32))
                a.max_held_per_agent = static_cast<uint32_t>(*i);
            } else if (k == "max_held_total") {
              if (auto i = integer(v, key, 1, u32)) a.max_held_total = static_cast<uint32_t>(*i);
            } else if (k == "overlay") {
              path_into(v, key, a.overlay);
            } else if (k == "access_requests") {
              bool_into(v, key, a.access_requests);
            }
          });
}

void parser::ask(const YAML::Node& node, const std::string& path, model::ask& a) {
  // `ask: true` (the policy's timeout) or `ask: {timeout: 30s}`.
  if (node.IsScalar()) {
    bool_into(node, path, a.on);
    return;
  }
  a.on = true;
  entries(node, path, ask_keys, {},
          [&](const std::string&, const YAML::Node& v, const std::string& key) {
            std::chrono::milliseconds t{0};
            duration_into(v, key, t, std::chrono::milliseconds(1), max_hold);
            if (t.count() > 0) a.timeout = t;
          });
}

void parser::operators(const YAML::Node& node, const std::string& path,
                       std::vector<model::operator_token>& out) {
  // The same shape as agents: {NAME: {token_sha256: HEX}}; checked in operators.cpp.
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of operator names")) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (errors_.full()) return;
    if (!it->first.IsScalar()) {
      error(it->first, path, "operator names must be strings");
      continue;
    }
    model::operator_token o;
    o.name = it->first.Scalar();
    const std::string key = join(path, o.name);
    if (std::any_of(out.begin(), out.end(), [&](const auto& x) { return x.name == o.name; })) {
      error(it->first, key, core::str_cat("duplicate operator '", o.name, "'"));
      continue;
    }
    marks_.set(key, to_mark(it->first.Mark()));
    entries(it->second, key, operator_keys, {},
            [&](const std::string&, const YAML::Node& v, const std::string& child) {
              string_into(v, child, o.token_sha256);
            });
    out.push_back(std::move(o));
  }
}

void parser::included(const YAML::Node& root, const std::string& path, model::policy& p) {
  if (root.IsNull()) return;  // an empty overlay: nothing approved for good yet
  entries(root, path, included_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "rules") {
              std::vector<model::rule> added;
              // Keyed as the policy's own rules[N] (after them): the compiler's checks of a
              // rule (its name, hosts, patterns) look its positions up under that key.
              rules(v, "rules", added, p.rules.size());
              for (auto& r : added)
                p.rules.push_back(std::move(r));
              return;
            }
            if (!expect(v, key, YAML::NodeType::Map, "a mapping of agent names")) return;
            for (auto it = v.begin(); it != v.end(); ++it) {
              if (errors_.full()) return;
              if (!it->first.IsScalar()) {
                error(it->first, key, "agent names must be strings");
                continue;
              }
              const std::string name = it->first.Scalar();
              const std::string akey = join(key, name);
              auto agent = std::find_if(p.agents.begin(), p.agents.end(),
                                        [&](const auto& a) { return a.name == name; });
              // An included file adds rules to agents; it never makes one (an agent's identity
              // and tokens stay in the operator's own file).
              if (agent == p.agents.end()) {
                error(it->first, akey, "no such agent in the policy");
                continue;
              }
              entries(it->second, akey, included_agent_keys, {},
                      [&](const std::string&, const YAML::Node& rv, const std::string& rkey) {
                        std::vector<std::string> names;
                        strings_into(rv, rkey, names);
                        for (auto& n : names)
                          agent->rules.push_back(std::move(n));
                      });
            }
          });
}

}  // namespace airlock::policy::detail

namespace airlock::policy {

void parse_included(std::string_view yaml, const std::string& base_dir, const std::string& key,
                    model::policy& out, mark_table& marks, error_sink& errors) {
  try {
    auto document = read_yaml_document(yaml);
    using status = yaml_document::status;
    if (document.what == status::several || document.what == status::stuck) {
      errors.add(to_mark(document.second), key, "only one YAML document is allowed");
      return;
    }
    if (document.what == status::none) return;
    detail::parser(base_dir, marks, errors).included(document.root, key, out);
  } catch (const YAML::Exception& e) {
    errors.add(to_mark(e.mark), key, e.msg);
  }
}

}  // namespace airlock::policy
