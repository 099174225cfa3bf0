#include "filters/redaction/rule_engines.hpp"

#include "core/str_cat.hpp"
#include "filters/credentials/injection.hpp"
#include "filters/redaction/builtin.hpp"
#include "filters/redaction/policy_redactors.hpp"

#include <map>

namespace airlock::filters::redaction {

namespace {

// The name a Basic credential's base64 form is counted under: its password's secret (else its
// username's), so the audit record says which secret came back.
std::string basic_label(const policy::compiled_injection& inject,
                        std::span<const policy::compiled_secret> secrets) {
  for (const auto* t : {&inject.basic_password, &inject.basic_username})
    for (const auto& part : t->parts)
      if (part.secret != policy::secret_template::no_secret) return secrets[part.secret].name;
  return {};
}

}  // namespace

rule_engines::build_result rule_engines::build(const policy::snapshot& snapshot,
                                               const engine_options& opts,
                                               std::span<const literal_secret> retired) {
  build_result out;
  auto result = std::make_shared<rule_engines>();
  const auto custom = custom_redactors(snapshot);
  auto secrets = literal_secrets(snapshot);
  secrets.insert(secrets.end(), retired.begin(), retired.end());
  if (!secrets.empty()) {
    auto built = engine::build({}, secrets, opts);
    for (auto& e : built.errors)
      out.errors.push_back(core::str_cat("secrets: ", e));
    result->secrets_only_ = std::move(built.compiled);
  }
  // Rules listing the same redactors (and the same Basic credentials) share an engine.
  std::map<std::string, std::shared_ptr<const engine>> shared;
  // Literal-only engines differ only by a rule's Basic form ("" for none).
  std::map<std::string, std::shared_ptr<const engine>> shared_binary;
  result->by_rule_.resize(snapshot.rules().size());
  result->binary_by_rule_.resize(snapshot.rules().size());
  for (const auto& rule : snapshot.rules()) {
    if (!rule.redact.active && !rule.inject.active) continue;
    auto resolved = resolve_redactors(rule.redact.redactors, custom);
    for (auto& e : resolved.errors)
      out.errors.push_back(core::str_cat("rule ", rule.name, ": ", e));
    auto literals = secrets;
    std::string basic_key;  // "" unless the rule sends Basic credentials of its own
    if (auto basic = credentials::basic_authorization(rule.inject, snapshot.secrets())) {
      const std::string label = basic_label(rule.inject, snapshot.secrets());
      if (!label.empty()) {
        // "Basic " + base64: the base64 part is what an echo carries.
        literals.push_back({label, basic->substr(6)});
        basic_key = core::str_cat("basic:", rule.index);
      }
    }
    std::string key = basic_key;
    for (const auto& n : rule.redact.redactors)
      key += core::str_cat(",", n);
    auto& slot = shared[key];
    auto& binary = shared_binary[basic_key];
    if (!binary && !literals.empty()) {
      auto built = engine::build({}, literals, opts);
      for (auto& e : built.errors)
        out.errors.push_back(core::str_cat("rule ", rule.name, ": ", e));
      binary = std::move(built.compiled);
    }
    if (!slot) {
      auto built = engine::build(std::move(resolved.specs), std::move(literals), opts);
      for (auto& e : built.errors)
        out.errors.push_back(core::str_cat("rule ", rule.name, ": ", e));
      slot = std::move(built.compiled);
    }
    if (rule.index < result->by_rule_.size()) {
      result->by_rule_[rule.index] = slot;
      result->binary_by_rule_[rule.index] = binary;
    }
  }
  if (out.errors.empty()) out.engines = std::move(result);
  return out;
}

const std::shared_ptr<const engine>& rule_engines::for_binary(
    std::size_t rule_index) const noexcept {
  static const std::shared_ptr<const engine> none;
  return rule_index < binary_by_rule_.size() ? binary_by_rule_[rule_index] : none;
}

const std::shared_ptr<const engine>& rule_engines::for_rule(std::size_t rule_index) const noexcept {
  static const std::shared_ptr<const engine> none;
  return rule_index < by_rule_.size() ? by_rule_[rule_index] : none;
}

}  // namespace airlock::filters::redaction
