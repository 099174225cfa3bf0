#include "policy/dlp_parser.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "policy/host_pattern.hpp"
#include "policy/redactor_names.hpp"
#include "policy/yaml_map.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace airlock::policy {
namespace {

constexpr std::array<std::string_view, 7> kKeys = {
    "action", "classes", "entropy", "hostnames", "max_body_bytes", "enabled", "responses"};

struct reader {
  error_sink& errors;
  mark_table* marks = nullptr;

  void error(const YAML::Node& at, const std::string& key, std::string message) {
    errors.add(to_mark(at.Mark()), key, std::move(message));
  }

  bool boolean(const YAML::Node& n, const std::string& key, bool& out) {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return out = true, true;
      if (s == "false" || s == "False" || s == "FALSE") return out = false, true;
    }
    error(n, key, "expected true or false");
    return false;
  }

  void strings(const YAML::Node& n, const std::string& key, std::vector<std::string>& out) {
    if (!n.IsSequence()) {
      error(n, key, "expected a list of names");
      return;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string k = core::str_cat(key, "[", i, "]");
      if (marks != nullptr) marks->set(k, to_mark(n[i].Mark()));
      if (!n[i].IsScalar() || n[i].Scalar().empty()) {
        error(n[i], k, "expected a non-empty name");
        continue;
      }
      out.push_back(n[i].Scalar());
    }
  }

  void mapping(const YAML::Node& node, const std::string& path, model::dlp_config& out) {
    each_entry(
        node, path, errors,
        [&](const std::string& name, const YAML::Node& k, const YAML::Node& v,
            const std::string& key) {
          if (std::find(kKeys.begin(), kKeys.end(), name) == kKeys.end()) {
            error(
                k, key,
                core::str_cat(
                    "unknown key '", name,
                    "' (expected action, classes, entropy, hostnames, max_body_bytes, responses)"));
            return;
          }
          if (name == "action") {
            const std::string s = v.IsScalar() ? v.Scalar() : std::string();
            if (s == "block")
              out.action = model::dlp_action::block;
            else if (s == "report")
              out.action = model::dlp_action::report;
            else if (s == "redact")
              out.action = model::dlp_action::redact;
            else
              error(v, key, "expected block, report or redact");
          } else if (name == "responses") {
            const std::string s = v.IsScalar() ? v.Scalar() : std::string();
            using ra = model::response_action;
            if (s == "off")
              out.responses = ra::off;
            else if (s == "block")
              out.responses = ra::block;
            else if (s == "report")
              out.responses = ra::report;
            else if (s == "annotate")
              out.responses = ra::annotate;
            else
              error(v, key, "expected off, block, report or annotate");
          } else if (name == "classes") {
            strings(v, key, out.classes);
          } else if (name == "entropy") {
            boolean(v, key, out.entropy);
          } else if (name == "hostnames") {
            boolean(v, key, out.hostnames);
          } else if (name == "enabled") {
            bool on = true;
            if (boolean(v, key, on)) out.off = !on;
          } else if (name == "max_body_bytes") {
            const auto n = v.IsScalar() ? core::parse_size(v.Scalar()) : std::nullopt;
            if (!n || *n == 0)
              error(v, key, "expected a size of at least 1 byte (e.g. 65536, 64KiB, 1MiB)");
            else
              out.max_body_bytes = *n;
          }
        });
  }
};

}  // namespace

void parse_dlp(const YAML::Node& node, const std::string& path, model::dlp_config& out,
               mark_table& marks, error_sink& errors) {
  reader r{errors, &marks};
  out.present = true;
  if (node.IsScalar() && (node.Scalar() == "off" || node.Scalar() == "false")) {
    out.off = true;
    return;
  }
  if (node.IsScalar() && (node.Scalar() == "on" || node.Scalar() == "true")) return;
  if (!node.IsMap()) {
    r.error(node, path, "expected off, true or a mapping {action, classes, entropy, ...}");
    return;
  }
  r.mapping(node, path, out);
}

void parse_blocklist(const YAML::Node& node, const std::string& path,
                     std::vector<model::blocked_host>& out, error_sink& errors) {
  reader r{errors};
  std::vector<std::string> names;
  r.strings(node, path, names);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string why;
    auto p = parse_host_pattern(names[i], why);
    if (!p) {
      r.error(node[i], core::str_cat(path, "[", i, "]"), why);
      continue;
    }
    model::blocked_host b{p->text, p->wildcard, {}};
    if (p->wildcard) b.suffix = p->dot_suffix.substr(1);
    out.push_back(std::move(b));
  }
}

void check_dlp_classes(const model::policy& p, const mark_table& marks, error_sink& errors) {
  auto check = [&](const model::dlp_config& d, const std::string& key) {
    for (std::size_t i = 0; i < d.classes.size(); ++i) {
      const std::string& c = d.classes[i];
      const bool custom = std::any_of(p.redactors.begin(), p.redactors.end(),
                                      [&](const model::redactor& r) { return r.name == c; });
      if (custom || is_builtin_redactor(c) || c == "seed-phrase" || c == "high-entropy" ||
          c == "nested-encoding")
        continue;
      const std::string k = core::str_cat(key, ".classes[", i, "]");
      errors.add(marks.find(k), k, core::str_cat("unknown DLP class '", c, "'"));
    }
  };
  check(p.dlp, "dlp");
  for (std::size_t i = 0; i < p.rules.size(); ++i)
    check(p.rules[i].dlp, core::str_cat("rules[", i, "].dlp"));
}

}  // namespace airlock::policy
