// The families the proxy exports (docs/metrics.md lists them), registered once per metrics
// object, their histogram buckets, and the label values the recording calls use.
#include "core/errc.hpp"
#include "telemetry/audit_format.hpp"
#include "telemetry/metrics_impl.hpp"

#include <atomic>

namespace airlock::telemetry {
namespace metrics_detail {
namespace {

// A unique id per metrics object, so that the thread-local caches never use pointers of a
// destroyed object that happened to live at the same address.
std::atomic<std::uint64_t> next_instance_id{1};

}  // namespace

using prometheus::Histogram;

// Request latencies: 0.5 ms (a cached deny) to 30 s (a slow upstream or a long body).
Histogram::BucketBoundaries request_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}
// A tunnel lives as long as the agent's TLS connection: seconds to an hour.
Histogram::BucketBoundaries tunnel_buckets() {
  return {0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600};
}
// Connection set-up: loopback is sub-millisecond, a distant TLS handshake a few seconds, and
// the connect timeout is 5 s by default.
Histogram::BucketBoundaries setup_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

// core::errc names are the only reasons and upstream error kinds; anything else is "other".
std::string_view errc_label(std::string_view name) noexcept {
  for (int i = 0; i < static_cast<int>(core::errc::count_); ++i) {
    if (core::name(static_cast<core::errc>(i)) == name) return name;
  }
  return "other";
}

std::string_view policy_label(std::string_view value) noexcept {
  if (value.empty()) return "none";
  if (!is_valid_utf8(value)) return invalid_label;
  return value;
}

std::string tuple_key(std::string_view agent, std::string_view rule, std::string_view decision,
                      std::string_view reason, std::string_view protocol) {
  std::string key;
  for (auto part : {agent, rule, decision, reason, protocol})
    append_key_part(key, part);
  return key;
}

std::uint64_t next_metrics_id() {
  return next_instance_id.fetch_add(1);
}

}  // namespace metrics_detail

using namespace metrics_detail;
using prometheus::Counter;
using prometheus::Gauge;

metrics::impl::impl(std::size_t max_series)
    : id(next_metrics_id()),
      registry(std::make_shared<prometheus::Registry>()),
      max_request_series(max_series),
      requests(
          prometheus::BuildCounter()
              .Name("airlock_requests_total")
              .Help("Requests and tunnels finished, by agent, rule, decision, reason and protocol.")
              .Register(*registry)),
      request_duration(prometheus::BuildHistogram()
                           .Name("airlock_request_duration_seconds")
                           .Help("Time from the request's arrival to the end of its response "
                                 "(tunnels: airlock_tunnel_duration_seconds).")
                           .Register(*registry)),
      tunnel_duration(prometheus::BuildHistogram()
                          .Name("airlock_tunnel_duration_seconds")
                          .Help("Lifetime of CONNECT tunnels, from the request to the close.")
                          .Register(*registry)),
      request_bytes(prometheus::BuildCounter()
                        .Name("airlock_request_bytes_total")
                        .Help("Body bytes relayed, by agent and direction (from_client: "
                              "request bodies and tunnel upload; to_client: responses).")
                        .Register(*registry)),
      connections_active(prometheus::BuildGauge()
                             .Name("airlock_connections_active")
                             .Help("Client connections open now.")
                             .Register(*registry)
                             .Add({})),
      connections_total(prometheus::BuildCounter()
                            .Name("airlock_connections_total")
                            .Help("Client connections accepted.")
                            .Register(*registry)
                            .Add({})),
      tunnels_active(prometheus::BuildGauge()
                         .Name("airlock_tunnels_active")
                         .Help("CONNECT tunnels (opaque or inspected) open now.")
                         .Register(*registry)
                         .Add({})),
      upstream_connect(prometheus::BuildHistogram()
                           .Name("airlock_upstream_connect_duration_seconds")
                           .Help("TCP connect time to upstream servers.")
                           .Register(*registry)
                           .Add({}, setup_buckets())),
      upstream_tls(prometheus::BuildHistogram()
                       .Name("airlock_upstream_tls_handshake_duration_seconds")
                       .Help("TLS handshake time with upstream servers (inspected tunnels).")
                       .Register(*registry)
                       .Add({}, setup_buckets())),
      upstream_errors(prometheus::BuildCounter()
                          .Name("airlock_upstream_errors_total")
                          .Help("Failures reaching or talking to upstream servers, by kind.")
                          .Register(*registry)),
      breaker_trips(prometheus::BuildCounter()
                        .Name("airlock_breaker_trips_total")
                        .Help("Times an agent's circuit breaker suspended it, by agent.")
                        .Register(*registry)),
      binary_requests(prometheus::BuildCounter()
                          .Name("airlock_binary_requests_total")
                          .Help("Requests by the program that made them (paths the policy's "
                                "`binaries` name; other; none) and decision.")
                          .Register(*registry)),
      redactions(prometheus::BuildCounter()
                     .Name("airlock_redactions_total")
                     .Help("Spans redacted from responses, by rule and redactor (secret:NAME "
                           "for an injected secret).")
                     .Register(*registry)),
      dlp(prometheus::BuildCounter()
              .Name("airlock_dlp_findings_total")
              .Help("Outbound DLP findings, by rule, detector class, location in the request "
                    "and action (block, report).")
              .Register(*registry)),
      mcp(prometheus::BuildCounter()
              .Name("airlock_mcp_calls_total")
              .Help("MCP / JSON-RPC messages, by rule, method, tool (names the policy lists, "
                    "else other) and decision.")
              .Register(*registry)),
      websocket(prometheus::BuildCounter()
                    .Name("airlock_websocket_messages_total")
                    .Help("WebSocket messages, by rule, direction (client: sent by the agent; "
                          "origin) and decision (allow, deny, report).")
                    .Register(*registry)),
      pool(prometheus::BuildCounter()
               .Name("airlock_upstream_pool_total")
               .Help("Upstream connections taken from the pool (hit) or opened (miss), by "
                     "transport: tcp for plain HTTP, tls for an intercepted tunnel's first.")
               .Register(*registry)),
      pool_hit(pool.Add({{"result", "hit"}, {"transport", "tcp"}})),
      pool_miss(pool.Add({{"result", "miss"}, {"transport", "tcp"}})),
      tls_pool_hit(pool.Add({{"result", "hit"}, {"transport", "tls"}})),
      tls_pool_miss(pool.Add({{"result", "miss"}, {"transport", "tls"}})),
      leaf_mints(prometheus::BuildCounter()
                     .Name("airlock_tls_leaf_mints_total")
                     .Help("Leaf certificates minted for TLS interception.")
                     .Register(*registry)
                     .Add({})),
      leaf_cache_hits(prometheus::BuildCounter()
                          .Name("airlock_tls_leaf_cache_hits_total")
                          .Help("Leaf certificates served from the cache.")
                          .Register(*registry)
                          .Add({})),
      reloads(prometheus::BuildCounter()
                  .Name("airlock_policy_reloads_total")
                  .Help("Policy loads, by result and trigger.")
                  .Register(*registry)),
      reload_failures(prometheus::BuildCounter()
                          .Name("airlock_policy_reload_failures_total")
                          .Help("Policy loads that failed; the previous policy stayed.")
                          .Register(*registry)
                          .Add({})),
      policy_info(prometheus::BuildGauge()
                      .Name("airlock_policy_info")
                      .Help("The policy in force: 1 for its version, no other series.")
                      .Register(*registry)),
      last_reload_success(prometheus::BuildGauge()
                              .Name("airlock_policy_last_reload_success_timestamp_seconds")
                              .Help("Unix time of the last successful policy load.")
                              .Register(*registry)
                              .Add({})),
      restart_required(prometheus::BuildGauge()
                           .Name("airlock_restart_required")
                           .Help("1 when the policy in force changed a listen.* address, which "
                                 "is read at start only: restart to apply it.")
                           .Register(*registry)
                           .Add({})),
      build_info(prometheus::BuildGauge()
                     .Name("airlock_build_info")
                     .Help("Build of the running binary: 1 with its version as a label.")
                     .Register(*registry)),
      // state: redis only: no series (so not exported) until the first report.
      store_up(prometheus::BuildGauge()
                   .Name("airlock_state_store_up")
                   .Help("1 while the shared state store (state: redis) is reachable, else 0.")
                   .Register(*registry)),
      store_mode_changes(
          prometheus::BuildCounter()
              .Name("airlock_state_store_mode_changes_total")
              .Help("Changes between the shared store and state.on_unavailable, either way.")
              .Register(*registry)),
      audit_writable(prometheus::BuildGauge()
                         .Name("airlock_audit_log_writable")
                         .Help("1 while the audit log can be written, 0 while writing it fails "
                               "(a full or failing disk); audit.on_failure applies meanwhile.")
                         .Register(*registry)
                         .Add({})),
      audit_dropped(prometheus::BuildCounter()
                        .Name("airlock_audit_records_dropped_total")
                        .Help("Audit records lost: not written, and not waiting in memory.")
                        .Register(*registry)
                        .Add({})),
      audit_write_errors(prometheus::BuildCounter()
                             .Name("airlock_audit_write_errors_total")
                             .Help("Failed writes of the audit log (each retry of a failing "
                                   "disk, every 100 ms, counts).")
                             .Register(*registry)
                             .Add({})) {
  audit_writable.Set(1);
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    prometheus::Labels labels{{"decision", std::string(decisions[i])}};
    duration_by_decision[i] = &request_duration.Add(labels, request_buckets());
    tunnel_duration_by_decision[i] = &tunnel_duration.Add(labels, tunnel_buckets());
  }
}

}  // namespace airlock::telemetry
