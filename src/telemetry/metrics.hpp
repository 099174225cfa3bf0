#pragma once
// Every Prometheus metric Airlock exports, declared in one place (Envoy's stats-struct idea).
// Label values come only from the policy (agent and rule names) and from fixed enumerations
// (decision, core::errc names, upstream error kinds), never from request data, so cardinality
// stays bounded.
//
// Thread safety: every member function may be called from any thread. The hot-path calls
// (request_finished, connection_*, tunnel_*) must not take a process-wide lock per call.

#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::telemetry {

class metrics {
 public:
  // max_request_series bounds the distinct (agent, rule, decision, reason, protocol) series of
  // airlock_requests_total; tuples beyond it are counted with agent and rule "_overflow".
  static constexpr std::size_t default_max_request_series = 10000;
  explicit metrics(std::string_view build_version,
                   std::size_t max_request_series = default_max_request_series);
  ~metrics();
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  prometheus::Registry& registry() noexcept;
  // Prometheus text exposition format of everything registered.
  std::string serialize() const;

  // One finished request or tunnel. decision: "allow" | "deny" | "report" | "error" (anything
  // else counts as "error"). reason: core::errc name ("ok" when allowed; anything else counts
  // as "other"). rule may be empty (label value "none"). Also observes
  // airlock_request_duration_seconds{decision} (or, when `tunnel` is true, the tunnel's
  // lifetime in airlock_tunnel_duration_seconds, so that long-lived tunnels do not swamp the
  // request latency quantiles) and adds the bytes to airlock_request_bytes_total{agent,direction}.
  // `protocol`: what carried it ("http/1.1", "h2", "websocket"), the counter's `protocol` label
  // as one of h1, h2, ws (anything else is h1).
  // Takes no lock once the calling thread has seen the same label tuple (thread-local cache).
  void request_finished(std::string_view agent, std::string_view rule, std::string_view decision,
                        std::string_view reason, std::chrono::microseconds duration,
                        std::uint64_t bytes_from_client, std::uint64_t bytes_to_client,
                        bool tunnel = false, std::string_view protocol = "http/1.1");

  void connection_opened() noexcept;  // client connections (gauge + counter)
  void connection_closed() noexcept;
  void tunnel_opened() noexcept;  // CONNECT tunnels, opaque or inspected (gauge)
  void tunnel_closed() noexcept;

  // Upstream connection set-up; kind is an errc name for errors ("dns_error", ...; anything
  // else counts as "other").
  void upstream_connect_time(std::chrono::microseconds d) noexcept;
  void upstream_tls_time(std::chrono::microseconds d) noexcept;
  void upstream_error(std::string_view kind);
  // An upstream connection reused from the pool or new: plain HTTP (tcp), or the first upstream
  // of an intercepted tunnel (tls).
  void pool_reuse(bool hit, bool tls = false) noexcept;

  // An agent's circuit breaker tripped (airlock_breaker_trips_total{agent}); agent names come
  // from the policy, so the label set is bounded by it.
  void breaker_tripped(std::string_view agent);
  // A request from a program (airlock_binary_requests_total{binary,decision}); the caller bounds
  // the label by the policy (a path it names, "other" or "none").
  void binary_request(std::string_view binary, std::string_view decision);
  // Response redaction: `count` more hits of `redactor` ("secret:NAME" for a secret) under rule.
  void redacted(std::string_view rule, std::string_view redactor, std::uint64_t count);
  // Outbound DLP: one finding (airlock_dlp_findings_total{rule,class,location,action}); classes
  // come from the policy's class lists, locations and actions are a fixed set.
  void dlp_finding(std::string_view rule, std::string_view cls, std::string_view location,
                   std::string_view action);
  // WebSocket messages of one connection, counted when it ends
  // (airlock_websocket_messages_total{rule,direction,decision}).
  void websocket_messages(std::string_view rule, std::string_view direction,
                          std::string_view decision, std::uint64_t count);

  // An MCP / JSON-RPC message (airlock_mcp_calls_total{rule,method,tool,decision}); the filter
  // bounds method and tool by the policy (names it lists, the MCP spec's methods, "other").
  void mcp_call(std::string_view rule, std::string_view method, std::string_view tool,
                std::string_view decision);

  void leaf_minted() noexcept;  // TLS interception
  void leaf_cache_hit() noexcept;

  // state: redis: the shared store is reachable or not (airlock_state_store_up); `changed`
  // counts a change of mode (airlock_state_store_mode_changes_total). Neither is exported before
  // the first call.
  void state_store(bool up, bool changed);

  // The audit log's state, read from it when the metrics are served: airlock_audit_log_writable
  // and the counters airlock_audit_records_dropped_total and airlock_audit_write_errors_total
  // (the totals since start; each call adds what grew).
  void audit_log_state(bool writable, std::uint64_t dropped, std::uint64_t write_errors) noexcept;

  // Policy reloads. ok=false counts a failure; on success version becomes the info metric
  // airlock_policy_info{version="..."} 1 (and the previous version's series is removed).
  void policy_loaded(bool ok, std::string_view version, std::string_view trigger);
  // airlock_restart_required: the policy in force names listen.* addresses other than those
  // the process bound at start.
  void restart_required(bool needed) noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace airlock::telemetry
