#include "filters/decision/decision_filter.hpp"

#include "policy/snapshot.hpp"

namespace airlock::filters::decision {
namespace {

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
    auto d = ex.snapshot->decide(*ex.agent, pt);
    ex.rule = d.rule;
    if (d.rule) ex.record.rule = d.rule->name;
    // Report mode with no rule to go on (policy-wide `mode: report` and no rule names the host)
    // has nothing to forward under: refused, as failing closed.
    if (!d.allowed() || !d.rule) return verdict::refuse(d.reason, std::move(d.detail));
    ex.report_mode = d.report_only || d.rule->mode == policy::model::mode::report;
    if (d.report_only) return verdict::violation(d.reason, std::move(d.detail));
    return verdict::next();
  }
};

}  // namespace

filter* decision_factory::create(const exchange&, std::pmr::memory_resource& arena) const {
  return make<decision_filter>(arena);
}

}  // namespace airlock::filters::decision
