#include "proxy/exchange_record.hpp"

#include "core/log.hpp"
#include "filters/rate_limit/plan.hpp"
#include "proxy/steady_ns.hpp"
#include "proxy/worker.hpp"
#include "telemetry/audit_log.hpp"
#include "telemetry/metrics.hpp"

namespace airlock::proxy {

exchange_record::exchange_record(worker& w, std::string_view client,
                                 std::string_view policy_version)
    : worker_(w),
      client_(client),
      policy_version_(policy_version),
      wall_start_(std::chrono::system_clock::now()),
      start_(std::chrono::steady_clock::now()) {}

void exchange_record::report(core::errc would_refuse, std::string why) {
  reported_ = true;
  reason = would_refuse;
  detail = std::move(why);
}

void exchange_record::failed_upstream(core::errc why) {
  upstream_failed_ = true;
  reason = why;
  if (auto* m = worker_.shared().metrics) m->upstream_error(core::name(why));
}

exchange_record::~exchange_record() {
  if (skipped_) return;
  try {
    std::string_view decision = upstream_failed_           ? "error"
                                : reported_                ? "report"
                                : reason == core::errc::ok ? "allow"
                                                           : "deny";
    auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start_);
    auto& shared = worker_.shared();
    if (shared.metrics) {
      shared.metrics->request_finished(agent, rule, decision, core::name(reason), duration,
                                       bytes_in, bytes_out, /*tunnel=*/scheme == "connect");
      if (connect_time.count() > 0) shared.metrics->upstream_connect_time(connect_time);
      for (const auto& [name, count] : redactions)
        shared.metrics->redacted(rule, name, count);
    }
    if (shared.audit) {
      telemetry::audit_record r;
      r.time = wall_start_;
      r.agent = agent;
      r.method = method;
      r.scheme = scheme;
      r.host = host;
      r.port = port;
      r.path = path;
      r.rule = rule;
      r.decision = decision;
      r.reason = core::name(reason);
      r.detail = detail;
      r.status = status;
      r.bytes_in = bytes_in;
      r.bytes_out = bytes_out;
      r.duration = duration;
      r.upstream = upstream;
      r.client = client_;
      r.policy_version = policy_version_;
      r.injected = injected;
      r.redactions = redactions;
      shared.audit->write(r);
    }
    // The circuit breaker counts what the agent got wrong and what failed for it; not its own
    // suspension (which would keep it suspended) nor an operator's stop.
    if (controls && (decision == "deny" || decision == "error") &&
        reason != core::errc::agent_suspended && reason != core::errc::agent_stopped) {
      if (controls->record_failure(agent_index, steady_now_ns())) {
        AIRLOCK_LOG(warn, "proxy", "agent ", agent,
                    " suspended by its circuit breaker (too many refusals and errors)");
        if (shared.metrics) shared.metrics->breaker_tripped(agent);
      }
    }
    if (decision == "deny" || decision == "report")
      AIRLOCK_LOG(debug, "proxy", agent, ' ', method, ' ', host, ':', port, ' ', decision, ' ',
                  core::name(reason), ": ", detail);
  } catch (...) {
    // Recording must never take a session down; the metric/audit is lost for this one.
  }
}

}  // namespace airlock::proxy
