#include "filters/pipeline.hpp"

#include "core/str_cat.hpp"
#include "filters/approval/access_filter.hpp"
#include "filters/approval/approval_filter.hpp"
#include "filters/credentials/credential_filters.hpp"
#include "filters/decision/decision_filter.hpp"
#include "filters/dlp/dlp_filter.hpp"
#include "filters/mcp/mcp_filter.hpp"
#include "filters/rate_limit/agent_gate.hpp"
#include "filters/rate_limit/rate_limit_filter.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/redaction/redaction_filter.hpp"
#include "filters/redaction/retired_secrets.hpp"
#include "filters/redaction/rule_engines.hpp"
#include "filters/validation/validation_filter.hpp"
#include "policy/snapshot.hpp"

namespace airlock::filters {

pipeline::build_result pipeline::build(std::shared_ptr<const policy::snapshot> snapshot,
                                       lasting_state& state) {
  build_result out;
  const auto retired =
      state.retired ? state.retired->carry(*snapshot, redaction::retired_secrets::clock::now())
                    : std::vector<redaction::literal_secret>{};
  auto engines = redaction::rule_engines::build(*snapshot, {}, retired);
  if (!engines.engines) {
    std::string error = "redaction: ";
    for (const auto& e : engines.errors)
      error += core::str_cat(e, "; ");
    out.errors.push_back(std::move(error));
    return out;
  }
  auto dlp_plan = dlp::dlp_plan::build(*snapshot, retired);
  if (!dlp_plan.plan) {
    for (auto& e : dlp_plan.errors)
      out.errors.push_back(std::move(e));
    return out;
  }
  auto mcp_plan = mcp::mcp_plan::build(*snapshot, *dlp_plan.plan, retired);
  if (!mcp_plan.plan) {
    for (auto& e : mcp_plan.errors)
      out.errors.push_back(std::move(e));
    return out;
  }
  auto p = std::make_shared<pipeline>();
  const auto secrets = snapshot->secrets();
  auto& f = p->factories_;
  f.push_back(std::make_unique<credentials::placeholder_guard_factory>(secrets));
  // The proxy's own endpoint (airlock.internal) before the rules: it is answered, never decided.
  f.push_back(std::make_unique<approval::access_factory>(*snapshot, state.approvals));
  // The kill switch and the breaker before the decision: a stopped agent's answers must not
  // say which hosts its rules allow.
  auto rates = state.rates->bind(snapshot);
  f.push_back(std::make_unique<rate_limit::agent_gate_factory>(rates));
  f.push_back(std::make_unique<decision::decision_factory>());
  f.push_back(std::make_unique<rate_limit::rate_limit_factory>(std::move(rates)));
  f.push_back(std::make_unique<credentials::placeholder_require_factory>());
  f.push_back(std::make_unique<validation::validation_factory>());
  // Before DLP: a tool call refused (a secret in its arguments included) is answered as
  // JSON-RPC, which the agent's MCP client shows, rather than as DLP's bare 403.
  f.push_back(std::make_unique<mcp::mcp_factory>(std::move(mcp_plan.plan),
                                                 state.rates->bind_tools(snapshot)));
  // After the rule is known and the request validated, before credentials go in: DLP reads
  // what the agent sent, never what the proxy adds.
  f.push_back(std::make_unique<dlp::dlp_factory>(std::move(dlp_plan.plan)));
  // After the kill switch and the limits (a stopped or limited agent is not held) and after
  // every check of the head (validation, MCP, DLP): an operator is never asked to approve what
  // the policy refuses, and the hold is listed and recorded with the target as DLP left it in
  // the record. Before the credentials go in; the body's checks run once it is approved.
  f.push_back(std::make_unique<approval::approval_factory>(*snapshot, state.approvals));
  f.push_back(std::make_unique<credentials::injection_factory>(secrets));
  f.push_back(std::make_unique<redaction::redaction_factory>(std::move(engines.engines)));
  p->snapshot_ = std::move(snapshot);
  out.built = std::move(p);
  return out;
}

}  // namespace airlock::filters
