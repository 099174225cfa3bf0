// The DLP plan of a policy snapshot (dlp_filter.hpp): per rule, its configuration and a scanner
// shared by the rules that read the same classes; and the blocklist's match.
#include "filters/dlp/dlp_filter.hpp"

#include "core/str_cat.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/redaction/policy_redactors.hpp"
#include "policy/snapshot.hpp"

#include <map>

namespace airlock::filters::dlp {

using policy::model::dlp_config;

bool blocklisted(const std::vector<policy::model::blocked_host>& list, std::string_view host) {
  for (const auto& b : list) {
    if (b.text == host) return true;
    if (b.wildcard &&
        (host == b.suffix || (host.size() > b.suffix.size() && host.ends_with(b.suffix) &&
                              host[host.size() - b.suffix.size() - 1] == '.')))
      return true;
  }
  return false;
}

scanner_config scanner_config_for(const policy::snapshot& snapshot, const dlp_config* cfg,
                                  std::span<const redaction::literal_secret> retired) {
  scanner_config out;
  if (cfg != nullptr) {
    out.classes = cfg->classes;
    out.entropy = cfg->entropy;
  }
  for (const auto& r : snapshot.redactors())
    out.custom.push_back(redaction::custom_redactor(r.name, r.pattern, r.replacement));
  out.secrets = redaction::literal_secrets(snapshot);
  out.secrets.insert(out.secrets.end(), retired.begin(), retired.end());
  for (const auto& s : snapshot.secrets())
    out.placeholders.push_back(s.placeholder);
  return out;
}

dlp_plan::build_result dlp_plan::build(const policy::snapshot& snapshot,
                                       std::span<const redaction::literal_secret> retired) {
  build_result out;
  auto plan = std::make_shared<dlp_plan>();
  plan->blocklist = snapshot.model().blocklist;
  const dlp_config& fallback = snapshot.model().dlp;
  std::map<std::string, std::shared_ptr<const scanner>> by_classes;
  // The plan for `cfg` (null, or off: none), its scanner shared by the rules reading the same
  // classes; an error names `owner`.
  auto plan_for = [&](const dlp_config* cfg, std::string_view owner) -> rule_plan {
    if (cfg == nullptr || cfg->off) return {};
    std::string key = cfg->entropy ? "+entropy" : "";
    for (const auto& c : cfg->classes)
      key += core::str_cat(",", c);
    auto& scan = by_classes[key];
    if (!scan) {
      auto built = scanner::build(scanner_config_for(snapshot, cfg, retired));
      for (auto& e : built.errors)
        out.errors.push_back(core::str_cat(owner, ": ", e));
      if (!built.built) return {};
      scan = std::move(built.built);
    }
    plan->any_rule = true;
    return {cfg, scan};
  };
  for (const auto& rule : snapshot.rules()) {
    const dlp_config* cfg = nullptr;
    if (rule.source != nullptr && rule.source->dlp.present)
      cfg = &rule.source->dlp;
    else if (fallback.present)
      cfg = &fallback;
    rule_plan rp = plan_for(cfg, core::str_cat("rule ", rule.name));
    if (plan->rules.size() <= rule.index) plan->rules.resize(rule.index + 1);
    plan->rules[rule.index] = std::move(rp);
  }
  if (fallback.present) plan->unmatched = plan_for(&fallback, "dlp");
  if (out.errors.empty()) out.plan = std::move(plan);
  return out;
}

}  // namespace airlock::filters::dlp
