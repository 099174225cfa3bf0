#include "filters/approval/approval_filter.hpp"

#include "filters/decision/decision_filter.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>

namespace airlock::filters::approval {
namespace {

class approval_filter final : public filter {
 public:
  explicit approval_filter(const approval_factory& f) : factory_(f) {}

  verdict on_request_head(exchange& ex) override {
    const bool unmatched = ex.rule == &filters::decision::unmatched_rule();
    if (ex.hold_for.count() == 0 && !unmatched) return verdict::next();
    registry* approvals = factory_.approvals();
    const request_info r = describe(ex);
    if (factory_.approved_for_good(r) || (approvals && approvals->granted(r)))
      return verdict::next();
    if (ex.hold_for.count() == 0 || approvals == nullptr) {
      // No rule allows it and no grant covers it: the decision's own refusal.
      auto d = filters::decision::decide(ex);
      if (d.rule) ex.record.rule = d.rule->name;
      return verdict::refuse(d.reason, std::move(d.detail));
    }
    std::string why;
    auto held = approvals->hold(r, factory_.limits(), ex.hold_for, why);
    if (!held) {
      auto v = verdict::refuse(core::errc::approval_limit, std::move(why));
      v.retry_after = 1;
      return v;
    }
    return verdict::wait(std::move(held));
  }

 private:
  const approval_factory& factory_;
};

}  // namespace

request_info describe(const exchange& ex) {
  // The target as the exchange's record shows it (the codec fills it, DLP replaces what it
  // found there), so every listing and record of the hold says what the exchange record says.
  const auto shown = [](const std::string& recorded, std::string_view sent) {
    return recorded.empty() ? std::string(sent) : recorded;
  };
  const std::string_view method =
      ex.request ? std::string_view(ex.request->method_string()) : std::string_view("CONNECT");
  request_info r;
  r.agent = ex.record.agent;
  r.host = shown(ex.record.host, ex.target.host.text);
  r.port = ex.target.port;
  r.method = shown(ex.record.method, method);
  r.redacted = r.host != ex.target.host.text || r.method != method;
  r.connect = ex.connect;
  r.in_tunnel = ex.in_tunnel;
  if (!ex.connect) r.path = shown(ex.record.path, ex.path);
  r.rule = ex.rule && ex.rule->source ? ex.rule->name : std::string();
  return r;
}

approval_factory::approval_factory(const policy::snapshot& snapshot, registry* approvals)
    : registry_(approvals) {
  const auto& a = snapshot.model().approvals;
  bounds_.per_agent = a.max_held_per_agent;
  bounds_.total = a.max_held_total;
  // The overlay's rules, as the agents list them: each a host, its ports and maybe a method
  // (overlay.cpp writes no other shape). A rule of that name written by hand in another shape
  // is still a rule like any other; it just does not count as a grant here.
  for (const auto& agent : snapshot.agents())
    for (const auto* rule : agent.rules) {
      const auto* src = rule->source;
      if (!src || !rule->name.starts_with(approved_rule_prefix) || src->hosts.size() != 1 ||
          src->ports.size() != 1 || src->ports[0].first != src->ports[0].last ||
          src->methods.size() > 1 || !src->paths.empty() || !src->host_regex.empty())
        continue;
      grant g;
      g.agent = agent.name;
      g.host = src->hosts[0];
      g.port = src->ports[0].first;
      if (!src->methods.empty()) g.method = src->methods[0];
      g.expires = std::chrono::system_clock::time_point::max();
      g.by = "overlay";
      permanent_.push_back(std::move(g));
    }
}

bool approval_factory::approved_for_good(const request_info& r) const {
  const auto now = std::chrono::system_clock::now();
  return std::any_of(permanent_.begin(), permanent_.end(),
                     [&](const grant& g) { return g.covers(r, now); });
}

filter* approval_factory::create(const exchange&, std::pmr::memory_resource& arena) const {
  // Every exchange, whatever the policy: a request the decision filter let on under
  // unmatched_rule() must meet this filter (fail closed), and the decision filter marks it
  // after create() ran.
  return make<approval_filter>(arena, *this);
}

}  // namespace airlock::filters::approval
