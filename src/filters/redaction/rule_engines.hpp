#pragma once
// The redaction engines of one policy snapshot, built when it is activated: one per rule that
// redacts or injects (rules with the same redactors and credentials share one), and one for
// every secret alone (for a response to a request whose placeholder was swapped for a value on
// a rule that neither redacts nor injects).
//
// Every engine redacts every secret of the policy, whatever the rule lists: a secret never goes
// back to the agent; nor does a value a reload rotated out (retired_secrets.hpp). A rule that sends
// Basic credentials also redacts their base64 form (an origin that echoes Authorization would
// otherwise hand it back encoded).
//
// @par Thread Safety
// Immutable after build; engines are shared by all workers.

#include "filters/redaction/engine.hpp"
#include "policy/snapshot.hpp"

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace airlock::filters::redaction {

class rule_engines {
 public:
  struct build_result;
  // `retired`: values a reload replaced (retired_secrets), redacted as the policy's own are.
  static build_result build(const policy::snapshot& snapshot, const engine_options& opts = {},
                            std::span<const literal_secret> retired = {});

  // The engine for a rule (compiled_rule::index), or null when the rule neither redacts nor
  // injects.
  const std::shared_ptr<const engine>& for_rule(std::size_t rule_index) const noexcept;
  // The same rule's literal secrets alone (every secret, the Basic form), to guard bodies that
  // are not redacted (binary); null when for_rule is.
  const std::shared_ptr<const engine>& for_binary(std::size_t rule_index) const noexcept;
  // Every secret of the policy and nothing else; null when the policy has no secrets.
  const std::shared_ptr<const engine>& secrets_only() const noexcept { return secrets_only_; }

 private:
  std::vector<std::shared_ptr<const engine>> by_rule_;
  std::vector<std::shared_ptr<const engine>> binary_by_rule_;
  std::shared_ptr<const engine> secrets_only_;
};

struct rule_engines::build_result {
  std::shared_ptr<const rule_engines> engines;  // null when errors is not empty
  std::vector<std::string> errors;              // "rule github: ...": names, never values
};

}  // namespace airlock::filters::redaction
