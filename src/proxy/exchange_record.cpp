#include "proxy/exchange_record.hpp"

#include "core/log.hpp"
#include "policy/snapshot.hpp"
#include "proxy/worker.hpp"
#include "telemetry/audit_log.hpp"
#include "telemetry/metrics.hpp"

namespace airlock::proxy {

recorder::recorder(worker& w, std::string_view client, std::string_view policy_version)
    : worker_(w),
      client_(client),
      policy_version_(policy_version),
      wall_start_(std::chrono::system_clock::now()),
      start_(std::chrono::steady_clock::now()) {}

recorder::~recorder() {
  const auto& r = ex.record;
  if (r.skipped) return;
  try {
    const std::string_view decision = r.decision();
    auto duration = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::steady_clock::now() - start_);
    auto& shared = worker_.shared();
    if (auto* m = shared.metrics) {
      m->request_finished(r.agent, r.rule, decision, core::name(r.reason), duration, r.bytes_in,
                          r.bytes_out, /*tunnel=*/r.scheme == "connect", r.protocol);
      if (r.upstream_failed) m->upstream_error(core::name(r.reason));
      if (r.connect_time.count() > 0) m->upstream_connect_time(r.connect_time);
      for (const auto& [name, count] : r.redactions)
        m->redacted(r.rule, name, count);
      // By program, where the policy names programs: the label is a path the policy names,
      // "other" for any other program and "none" without one, so the policy bounds it.
      if (ex.snapshot && ex.snapshot->names_binaries())
        m->binary_request(!r.binary                                   ? "none"
                          : ex.snapshot->names_binary(r.binary->path) ? r.binary->path
                                                                      : "other",
                          decision);
      for (const auto& f : r.dlp)
        m->dlp_finding(r.rule, f.cls, f.location, f.action);
      for (const auto& c : r.mcp)
        m->mcp_call(r.rule, c.method, c.tool, decision);
      // WebSocket messages, counted once the connection ends (no lock per message).
      if (const auto& w = r.websocket) {
        m->websocket_messages(r.rule, "client", "allow", w->client_messages);
        m->websocket_messages(r.rule, "origin", "allow", w->origin_messages);
        if (!w->refused_from.empty())
          m->websocket_messages(r.rule, w->refused_from, r.reported ? "report" : "deny", 1);
      }
    }
    if (shared.audit) {
      telemetry::audit_record a;
      a.time = wall_start_;
      a.agent = r.agent;
      a.method = r.method;
      a.scheme = r.scheme;
      a.host = r.host;
      a.port = r.port;
      a.path = r.path;
      a.rule = r.rule;
      a.decision = decision;
      a.reason = core::name(r.reason);
      a.detail = r.detail;
      a.status = r.status;
      a.bytes_in = r.bytes_in;
      a.bytes_out = r.bytes_out;
      a.duration = duration;
      a.upstream = r.upstream;
      a.protocol = r.protocol;
      a.upstream_protocol = r.upstream_protocol;
      a.client = client_;
      a.policy_version = policy_version_;
      a.injected = r.injected;
      a.redactions = r.redactions;
      if (r.binary) {
        a.binary = r.binary->path;
        a.binary_sha256 = r.binary->sha256;
        a.binary_ancestors = r.binary->ancestors;
      }
      std::vector<telemetry::audit_dlp_finding> dlp;
      dlp.reserve(r.dlp.size());
      for (const auto& f : r.dlp)
        dlp.push_back({f.cls, f.location, f.action});
      a.dlp = dlp;
      std::vector<telemetry::audit_mcp_call> mcp;
      mcp.reserve(r.mcp.size());
      for (const auto& c : r.mcp)
        mcp.push_back({c.method, c.tool});
      a.mcp = mcp;
      if (r.websocket) {
        const auto& w = *r.websocket;
        a.websocket = telemetry::audit_record::websocket_summary{
            w.client_messages, w.origin_messages, w.close_code,
            w.closed_by,       w.refused_from,    w.close_reply_code};
      }
      shared.audit->write(a);
    }
    if (ex.breaker_tripped) {
      AIRLOCK_LOG(warn, "proxy", "agent ", r.agent,
                  " suspended by its circuit breaker (too many refusals and errors)");
      if (shared.metrics) shared.metrics->breaker_tripped(r.agent);
    }
    if (decision == "deny" || decision == "report")
      AIRLOCK_LOG(debug, "proxy", r.agent, ' ', r.method, ' ', r.host, ':', r.port, ' ', decision,
                  ' ', core::name(r.reason), ": ", r.detail);
  } catch (...) {
    // Recording must never take a session down; the metric/audit is lost for this one.
  }
}

}  // namespace airlock::proxy
