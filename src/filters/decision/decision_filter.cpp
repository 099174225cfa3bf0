#include "filters/decision/decision_filter.hpp"

#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"

namespace airlock::filters::decision {
namespace {

// Under the policy-wide `mode: report`, a request no rule names goes through (a dry run) on no
// rule's terms: no pins, no CIDR exceptions, no checks, nothing injected or redacted, opaque
// tunnels. Its index is past every rule's, so no per-rule state applies to it.
const policy::compiled_rule& unlisted_rule() {
  static const policy::compiled_rule rule = [] {
    policy::compiled_rule r;
    r.index = static_cast<std::size_t>(-1);
    r.mode = policy::model::mode::report;
    return r;
  }();
  return rule;
}

class decision_filter final : public filter {
 public:
  verdict on_request_head(exchange& ex) override {
    policy::request_target pt;
    pt.method = ex.request->method_string();
    pt.host = &ex.target.host;
    pt.port = ex.target.port;
    pt.path = ex.path;
    pt.upgrade = ex.upgrade;
    pt.is_connect = ex.connect;
    pt.binary = ex.binary;  // rules with `binaries` (null: unknown, which they refuse)
    // A request inside an intercepted tunnel came in as https (a rule's `schemes`); plain HTTP
    // a client sends through a tunnel is http.
    if (ex.in_tunnel)
      pt.scheme = ex.tunnel_plain ? policy::model::scheme::http : policy::model::scheme::https;
    auto d = ex.snapshot->decide(*ex.agent, pt);
    if (d.rule) ex.record.rule = d.rule->name;
    if (!d.allowed()) return verdict::refuse(d.reason, std::move(d.detail));
    ex.rule = d.rule ? d.rule : &unlisted_rule();
    ex.report_mode = d.report_only || ex.rule->mode == policy::model::mode::report;
    if (d.report_only) return verdict::violation(d.reason, std::move(d.detail));
    // The rule's `protocols`: a request (not the CONNECT itself) in a protocol it does not list.
    const auto bit =
        ex.record.protocol == "h2" ? policy::model::protocol_h2 : policy::model::protocol_http1;
    if (!ex.connect && ex.rule->source && (ex.rule->source->protocols & bit) == 0)
      return verdict::violation(
          core::errc::protocol_denied,
          core::str_cat("rule ", ex.rule->name, " does not allow ", ex.record.protocol));
    return verdict::next();
  }
};

}  // namespace

filter* decision_factory::create(const exchange&, std::pmr::memory_resource& arena) const {
  return make<decision_filter>(arena);
}

}  // namespace airlock::filters::decision
