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

bool may_ask(core::errc reason) {
  using core::errc;
  return reason == errc::host_denied || reason == errc::port_denied ||
         reason == errc::scheme_denied || reason == errc::method_denied ||
         reason == errc::path_denied;
}

}  // namespace

const policy::compiled_rule& unmatched_rule() {
  static const policy::compiled_rule rule = [] {
    policy::compiled_rule r;
    r.name = "(approved)";
    r.index = static_cast<std::size_t>(-1);
    return r;
  }();
  return rule;
}

policy::decision decide(const exchange& ex) {
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
  return ex.snapshot->decide(*ex.agent, pt);
}

namespace {

class decision_filter final : public filter {
 public:
  verdict on_request_head(exchange& ex) override {
    if (ex.proxy_endpoint) return verdict::next();  // answered by the access filter
    auto d = decide(ex);
    if (d.rule) ex.record.rule = d.rule->name;
    const auto& approvals = ex.snapshot->model().approvals;
    if (!d.allowed()) {
      if (!(approvals.ask_unmatched || approvals.access_requests) || !may_ask(d.reason)) {
        // A method outside HTTP's registry is any token the agent chose (a key, say), and
        // nothing read it yet (DLP comes after): neither the record nor the detail repeats it.
        if (ex.request != nullptr && !ex.connect &&
            ex.request->method() == boost::beast::http::verb::unknown) {
          ex.record.method = "[unregistered]";
          if (d.reason == core::errc::method_denied)
            d.detail = core::str_cat("rule ", d.rule ? d.rule->name : "", ": method not allowed");
        }
        ex.refused_under = d.rule;
        return verdict::refuse(d.reason, std::move(d.detail));
      }
      // Held for an operator (ask_unmatched), or let through only by a grant (an approved
      // access request): the approval filter decides, and refuses as here when neither.
      ex.record.rule.clear();
      ex.rule = &unmatched_rule();
      if (approvals.ask_unmatched) ex.hold_for = approvals.timeout;
      return verdict::next();
    }
    ex.rule = d.rule ? d.rule : &unlisted_rule();
    // A rule's `ask`. A CONNECT is held before the proxy connects anywhere; under an inspected
    // rule each request inside the tunnel is held again (unless a grant covers it), since only
    // then are its method and path visible.
    if (d.rule && d.rule->source && d.rule->source->ask.on && !d.report_only)
      ex.hold_for = d.rule->source->ask.timeout.value_or(approvals.timeout);
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
