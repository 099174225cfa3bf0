// A rule's request checks (query, headers, JSON body), its credentials (inject) and its
// redaction, read by the policy parser (parser_sections.hpp).
#include "policy/parser_sections.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace airlock::policy::detail {
namespace {

constexpr std::string_view query_keys[] = {"params", "required", "unknown"};
constexpr std::string_view header_keys[] = {"required", "forbidden", "match"};
constexpr std::string_view body_keys[] = {"max_bytes", "json"};
constexpr std::string_view json_field_keys[] = {"type",    "pattern", "enum",    "max_length",
                                                "minimum", "maximum", "required"};
constexpr std::string_view inject_keys[] = {"headers", "query", "basic", "require"};
constexpr std::string_view basic_keys[] = {"username", "password"};
constexpr std::string_view redact_keys[] = {"redactors", "max_bytes"};

}  // namespace

bool parser::named_entry(const YAML::Node& name_node, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& out,
                         std::string& key) {
  if (!name_node.IsScalar() || name_node.Scalar().empty()) {
    error(name_node, path, "names must be non-empty strings");
    return false;
  }
  const std::string& name = name_node.Scalar();
  key = join(path, name);
  if (std::any_of(out.begin(), out.end(), [&](const auto& e) { return e.first == name; })) {
    error(name_node, key, core::str_cat("duplicate name '", name, "'"));
    return false;
  }
  marks_.set(key, to_mark(name_node.Mark()));
  return true;
}

void parser::pattern_map(const YAML::Node& node, const std::string& path,
                         std::vector<std::pair<std::string, std::string>>& out) {
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of names to patterns")) return;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (errors_.full()) return;
    const YAML::Node value = it->second;
    std::string key;
    if (!named_entry(it->first, path, out, key)) continue;
    const std::string name = it->first.Scalar();
    if (value.IsNull()) {
      out.emplace_back(name, std::string{});
    } else if (auto s = string(value, key)) {
      out.emplace_back(name, std::move(*s));
    }
  }
}

void parser::query(const YAML::Node& node, const std::string& path, model::query_checks& q) {
  q.present = true;
  entries(node, path, query_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "params") {
              pattern_map(v, key, q.params);
            } else if (k == "required") {
              strings_into(v, key, q.required);
            } else if (k == "unknown") {
              auto s = string(v, key);
              if (!s) return;
              if (*s == "refuse")
                q.unknown = model::unknown_params::refuse;
              else if (*s == "strip")
                q.unknown = model::unknown_params::strip;
              else if (*s == "allow")
                q.unknown = model::unknown_params::allow;
              else
                error(v, key, "expected refuse, strip or allow");
            }
          });
}

void parser::headers(const YAML::Node& node, const std::string& path, model::header_checks& h) {
  entries(node, path, header_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "required")
              strings_into(v, key, h.required);
            else if (k == "forbidden")
              strings_into(v, key, h.forbidden);
            else if (k == "match")
              pattern_map(v, key, h.patterns);
          });
}

void parser::body(const YAML::Node& node, const std::string& path, model::body_checks& b) {
  entries(node, path, body_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "max_bytes") {
              constexpr auto unset = std::numeric_limits<std::uint64_t>::max();
              std::uint64_t n = unset;
              size_into(v, key, n, 0);
              if (n != unset) b.max_bytes = n;
            } else if (k == "json") {
              b.json = true;
              if (v.IsNull()) return;  // `json:` alone: the body must be JSON, no field checks
              json_fields(v, key, b.fields);
            }
          });
}

void parser::json_fields(const YAML::Node& v, const std::string& key,
                         std::vector<model::json_field>& out) {
  if (!expect(v, key, YAML::NodeType::Map, "a mapping of field paths")) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (errors_.full()) return;
    const YAML::Node name_node = it->first;
    if (!name_node.IsScalar() || name_node.Scalar().empty()) {
      error(name_node, key, "field paths must be non-empty strings");
      continue;
    }
    model::json_field f;
    f.path = name_node.Scalar();
    const std::string fkey = join(key, f.path);
    if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.path == f.path; })) {
      error(name_node, fkey, core::str_cat("duplicate field '", f.path, "'"));
      continue;
    }
    marks_.set(fkey, to_mark(name_node.Mark()));
    json_field(it->second, fkey, f);
    out.push_back(std::move(f));
  }
}

void parser::template_map(const YAML::Node& node, const std::string& path,
                          std::vector<std::pair<std::string, std::string>>& out) {
  if (!expect(node, path, YAML::NodeType::Map, "a mapping of names to templates")) return;
  if (node.size() == 0) {
    error(node, path, "must not be empty (omit the key)");
    return;
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (errors_.full()) return;
    std::string key;
    if (!named_entry(it->first, path, out, key)) continue;
    // A template is a string; nothing is quoted back (it may hold a pasted secret).
    if (auto s = string(it->second, key)) out.emplace_back(it->first.Scalar(), std::move(*s));
  }
}

void parser::inject(const YAML::Node& node, const std::string& path, model::inject& in) {
  in.present = true;
  entries(node, path, inject_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "headers") {
              template_map(v, key, in.headers);
            } else if (k == "query") {
              template_map(v, key, in.query);
            } else if (k == "basic") {
              in.has_basic = true;
              entries(v, key, basic_keys, {},
                      [&](const std::string& bk, const YAML::Node& bv, const std::string& child) {
                        if (bk == "username")
                          string_into(bv, child, in.basic_username);
                        else if (bk == "password")
                          string_into(bv, child, in.basic_password);
                      });
            } else if (k == "require") {
              strings_into(v, key, in.require);
            }
          });
}

void parser::redact(const YAML::Node& node, const std::string& path, model::redact& r) {
  r.present = true;
  // Short form: a list of redactor names. Long form: {redactors: [...], max_bytes: size}.
  if (node.IsSequence()) {
    strings_into(node, path, r.redactors);
    return;
  }
  if (!node.IsMap()) {
    // marks_ has the key's position when the value is null (`redact:` alone).
    errors_.add(
        marks_.find(path), path,
        core::str_cat("expected a list of redactor names or a mapping {redactors, max_bytes}, "
                      "got ",
                      describe(node)));
    return;
  }
  entries(node, path, redact_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "redactors") {
              strings_into(v, key, r.redactors);
            } else if (k == "max_bytes") {
              constexpr auto unset = std::numeric_limits<std::uint64_t>::max();
              std::uint64_t n = unset;
              size_into(v, key, n, 1);
              if (n != unset) r.max_bytes = n;
            }
          });
}

std::optional<double> parser::number(const YAML::Node& n, const std::string& key) {
  if (!expect(n, key, YAML::NodeType::Scalar, "a number")) return std::nullopt;
  const std::string& s = n.Scalar();
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) {
    error(n, key, core::str_cat("expected a number, got '", s, "'"));
    return std::nullopt;
  }
  return v;
}

void parser::json_field(const YAML::Node& node, const std::string& path, model::json_field& f) {
  if (node.IsNull()) return;  // `field:` alone: no constraint beyond the body being JSON
  entries(node, path, json_field_keys, {},
          [&](const std::string& k, const YAML::Node& v, const std::string& key) {
            if (k == "type") {
              static constexpr std::pair<std::string_view, model::json_type> types[] = {
                  {"string", model::json_type::string},   {"number", model::json_type::number},
                  {"integer", model::json_type::integer}, {"boolean", model::json_type::boolean},
                  {"object", model::json_type::object},   {"array", model::json_type::array},
                  {"null", model::json_type::null}};
              auto s = string(v, key);
              if (!s) return;
              for (const auto& [name, type] : types) {
                if (*s == name) {
                  f.type = type;
                  return;
                }
              }
              error(v, key, "expected string, number, integer, boolean, object, array or null");
            } else if (k == "pattern") {
              string_into(v, key, f.pattern);
            } else if (k == "enum") {
              strings_into(v, key, f.enum_values);
            } else if (k == "max_length") {
              f.max_length = integer(v, key, 0, std::numeric_limits<std::uint32_t>::max());
            } else if (k == "minimum") {
              f.minimum = number(v, key);
            } else if (k == "maximum") {
              f.maximum = number(v, key);
            } else if (k == "required") {
              bool_into(v, key, f.required);
            }
          });
}

}  // namespace airlock::policy::detail
