#pragma once
// The policy decision as a filter: the agent's rules matched against the request's host, port,
// method, path and upgrade (policy::snapshot::decide). Sets the exchange's rule and whether
// report mode applies; a denial under report mode is reported, not refused.

#include "filters/filter.hpp"
#include "policy/snapshot.hpp"

namespace airlock::filters::decision {

// The policy's decision for the exchange's request (what the filter starts from).
policy::decision decide(const exchange& ex);

// The rule of a request no rule allows that an operator may still let through
// (approvals.ask_unmatched, or a grant from an approved access request): no rule's terms (no
// pins, checks, credentials or redaction; an opaque tunnel), enforced. The approval filter
// holds such a request, or lets it through when a grant covers it, else refuses it with the
// decision's own reason.
const policy::compiled_rule& unmatched_rule();

class decision_factory final : public filter_factory {
 public:
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;
};

}  // namespace airlock::filters::decision
