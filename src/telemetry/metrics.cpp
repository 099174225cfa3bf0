#include "telemetry/metrics.hpp"

#include "core/errc.hpp"
#include "telemetry/audit_format.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace airlock::telemetry {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Label value for the agent and rule of request series beyond the series cap.
constexpr std::string_view overflow_label = "_overflow";
// Label value that replaces a value that is not valid UTF-8 (the text format requires UTF-8).
constexpr std::string_view invalid_label = "_invalid";
// A unique id per metrics object, so that the thread-local caches never use pointers of a
// destroyed object that happened to live at the same address.
std::atomic<std::uint64_t> next_instance_id{1};

constexpr std::array<std::string_view, 4> decisions{"allow", "deny", "report", "error"};

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

double seconds(std::chrono::microseconds d) noexcept {
  return d.count() < 0 ? 0.0 : static_cast<double>(d.count()) / 1e6;
}

std::size_t decision_index(std::string_view decision) noexcept {
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    if (decisions[i] == decision) return i;
  }
  return 3;  // anything unexpected is counted as "error" (fail closed, bounded labels)
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

// Appends `part` with its length in front, so that no two label tuples share a key whatever
// bytes the values contain (a separator character could appear inside a value).
void append_key_part(std::string& key, std::string_view part) {
  auto n = static_cast<std::uint32_t>(part.size());
  key.append(reinterpret_cast<const char*>(&n), sizeof n);
  key.append(part);
}

std::string tuple_key(std::string_view agent, std::string_view rule, std::string_view decision,
                      std::string_view reason, std::string_view protocol) {
  std::string key;
  for (auto part : {agent, rule, decision, reason, protocol})
    append_key_part(key, part);
  return key;
}

// The carrying protocol as a label of three values (a fixed cardinality): "h2", "ws" for a
// WebSocket connection, "h1" for anything else (HTTP/1.x requests and CONNECT tunnels).
std::string_view protocol_label(std::string_view protocol) {
  if (protocol == "h2") return "h2";
  if (protocol == "websocket") return "ws";
  return "h1";
}

struct request_series {
  Counter* requests;
  Counter* bytes_from_client;
  Counter* bytes_to_client;
  Histogram* duration;
  Histogram* tunnel_duration;
};

// Per-thread map from the raw label tuple to the series' pointers: the hot path neither locks
// nor hashes a prometheus::Labels map once a thread has seen a tuple.
struct request_cache {
  std::uint64_t owner = 0;
  std::string key;
  std::unordered_map<std::string, request_series> map;
};
constexpr std::size_t max_cached_per_thread = 4096;

}  // namespace

struct metrics::impl {
  explicit impl(std::size_t max_series)
      : id(next_instance_id.fetch_add(1)),
        registry(std::make_shared<prometheus::Registry>()),
        max_request_series(max_series),
        requests(
            prometheus::BuildCounter()
                .Name("airlock_requests_total")
                .Help(
                    "Requests and tunnels finished, by agent, rule, decision, reason and protocol.")
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
                 .Help("Plain-HTTP upstream connections taken from the pool (hit) or opened "
                       "(miss).")
                 .Register(*registry)),
        pool_hit(pool.Add({{"result", "hit"}})),
        pool_miss(pool.Add({{"result", "miss"}})),
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
                .Register(*registry)) {
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      prometheus::Labels labels{{"decision", std::string(decisions[i])}};
      duration_by_decision[i] = &request_duration.Add(labels, request_buckets());
      tunnel_duration_by_decision[i] = &tunnel_duration.Add(labels, tunnel_buckets());
    }
  }

  request_series* lookup(std::string_view agent, std::string_view rule, std::string_view decision,
                         std::string_view reason, std::string_view protocol);
  request_series create(std::string_view agent, std::string_view rule, std::string_view decision,
                        std::string_view reason, std::string_view protocol);

  const std::uint64_t id;
  std::shared_ptr<prometheus::Registry> registry;
  const std::size_t max_request_series;

  Family<Counter>& requests;
  Family<Histogram>& request_duration;
  Family<Histogram>& tunnel_duration;
  Family<Counter>& request_bytes;
  Gauge& connections_active;
  Counter& connections_total;
  Gauge& tunnels_active;
  Histogram& upstream_connect;
  Histogram& upstream_tls;
  Family<Counter>& upstream_errors;
  Family<Counter>& breaker_trips;
  Family<Counter>& binary_requests;
  Family<Counter>& redactions;
  Family<Counter>& dlp;
  Family<Counter>& mcp;
  Family<Counter>& websocket;
  Family<Counter>& pool;
  Counter& pool_hit;
  Counter& pool_miss;
  Counter& leaf_mints;
  Counter& leaf_cache_hits;
  Family<Counter>& reloads;
  Counter& reload_failures;
  Family<Gauge>& policy_info;
  Gauge& last_reload_success;
  Gauge& restart_required;
  Family<Gauge>& build_info;
  Family<Gauge>& store_up;
  Family<Counter>& store_mode_changes;
  std::array<Histogram*, decisions.size()> duration_by_decision{};
  std::array<Histogram*, decisions.size()> tunnel_duration_by_decision{};

  // Cold paths only: first sight of a label tuple on a thread, upstream errors, reloads.
  std::mutex mu;
  std::unordered_set<std::string> request_tuples;                   // guarded by mu
  std::unordered_map<std::string, Counter*> upstream_error_series;  // guarded by mu
  Gauge* policy_info_current = nullptr;                             // guarded by mu
};

request_series metrics::impl::create(std::string_view agent_raw, std::string_view rule_raw,
                                     std::string_view decision_raw, std::string_view reason_raw,
                                     std::string_view protocol) {
  std::string agent(policy_label(agent_raw));
  std::string rule(policy_label(rule_raw));
  std::size_t d = decision_index(decision_raw);
  std::string decision(decisions[d]);
  std::string reason(errc_label(reason_raw));

  std::lock_guard lk(mu);
  std::string tuple = tuple_key(agent, rule, decision, reason, protocol);
  if (!request_tuples.contains(tuple)) {
    if (request_tuples.size() >= max_request_series) {
      // A policy with thousands of agents x rules (or a bug feeding request data into labels)
      // must not grow the exposition without bound: fold the rest into one agent/rule.
      agent = rule = std::string(overflow_label);
      tuple = tuple_key(agent, rule, decision, reason, protocol);
    }
    request_tuples.insert(tuple);
  }
  request_series s;
  s.requests = &requests.Add({{"agent", agent},
                              {"rule", rule},
                              {"decision", decision},
                              {"reason", reason},
                              {"protocol", std::string(protocol)}});
  s.bytes_from_client = &request_bytes.Add({{"agent", agent}, {"direction", "from_client"}});
  s.bytes_to_client = &request_bytes.Add({{"agent", agent}, {"direction", "to_client"}});
  s.duration = duration_by_decision[d];
  s.tunnel_duration = tunnel_duration_by_decision[d];
  return s;
}

request_series* metrics::impl::lookup(std::string_view agent, std::string_view rule,
                                      std::string_view decision, std::string_view reason,
                                      std::string_view protocol) {
  thread_local request_cache cache;
  if (cache.owner != id) {
    cache.map.clear();
    cache.owner = id;
  }
  cache.key.clear();
  for (auto part : {agent, rule, decision, reason, protocol})
    append_key_part(cache.key, part);
  auto it = cache.map.find(cache.key);
  if (it != cache.map.end()) return &it->second;
  if (cache.map.size() >= max_cached_per_thread) cache.map.clear();
  auto s = create(agent, rule, decision, reason, protocol);
  return &cache.map.emplace(cache.key, s).first->second;
}

metrics::metrics(std::string_view build_version, std::size_t max_request_series)
    : impl_(std::make_unique<impl>(max_request_series)) {
  impl_->build_info.Add({{"version", std::string(policy_label(build_version))}}).Set(1);
}

metrics::~metrics() = default;

prometheus::Registry& metrics::registry() noexcept {
  return *impl_->registry;
}

std::string metrics::serialize() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

void metrics::request_finished(std::string_view agent, std::string_view rule,
                               std::string_view decision, std::string_view reason,
                               std::chrono::microseconds duration, std::uint64_t bytes_from_client,
                               std::uint64_t bytes_to_client, bool tunnel,
                               std::string_view protocol) {
  request_series* s = impl_->lookup(agent, rule, decision, reason, protocol_label(protocol));
  s->requests->Increment();
  (tunnel ? s->tunnel_duration : s->duration)->Observe(seconds(duration));
  if (bytes_from_client) s->bytes_from_client->Increment(static_cast<double>(bytes_from_client));
  if (bytes_to_client) s->bytes_to_client->Increment(static_cast<double>(bytes_to_client));
}

void metrics::connection_opened() noexcept {
  impl_->connections_active.Increment();
  impl_->connections_total.Increment();
}
void metrics::connection_closed() noexcept {
  impl_->connections_active.Decrement();
}
void metrics::tunnel_opened() noexcept {
  impl_->tunnels_active.Increment();
}
void metrics::tunnel_closed() noexcept {
  impl_->tunnels_active.Decrement();
}

void metrics::upstream_connect_time(std::chrono::microseconds d) noexcept {
  impl_->upstream_connect.Observe(seconds(d));
}
void metrics::upstream_tls_time(std::chrono::microseconds d) noexcept {
  impl_->upstream_tls.Observe(seconds(d));
}

void metrics::upstream_error(std::string_view kind) {
  std::string label(errc_label(kind));
  std::lock_guard lk(impl_->mu);
  auto it = impl_->upstream_error_series.find(label);
  if (it == impl_->upstream_error_series.end()) {
    Counter* c = &impl_->upstream_errors.Add({{"kind", label}});
    it = impl_->upstream_error_series.emplace(label, c).first;
  }
  it->second->Increment();
}

void metrics::breaker_tripped(std::string_view agent) {
  std::lock_guard lk(impl_->mu);  // rare: a trip suspends the agent for its cool-down
  impl_->breaker_trips.Add({{"agent", std::string(agent)}}).Increment();
}

void metrics::binary_request(std::string_view binary, std::string_view decision) {
  std::lock_guard lk(impl_->mu);  // only where the policy names programs
  impl_->binary_requests.Add({{"binary", std::string(binary)}, {"decision", std::string(decision)}})
      .Increment();
}

void metrics::redacted(std::string_view rule, std::string_view redactor, std::uint64_t count) {
  std::lock_guard lk(impl_->mu);  // once per redacted response, not per byte
  impl_->redactions.Add({{"rule", std::string(rule)}, {"redactor", std::string(redactor)}})
      .Increment(static_cast<double>(count));
}

void metrics::dlp_finding(std::string_view rule, std::string_view cls, std::string_view location,
                          std::string_view action) {
  std::lock_guard lk(impl_->mu);  // once per finding
  impl_->dlp
      .Add({{"rule", std::string(rule)},
            {"class", std::string(cls)},
            {"location", std::string(location)},
            {"action", std::string(action)}})
      .Increment();
}

void metrics::mcp_call(std::string_view rule, std::string_view method, std::string_view tool,
                       std::string_view decision) {
  std::lock_guard lk(impl_->mu);  // once per JSON-RPC message
  impl_->mcp
      .Add({{"rule", std::string(rule)},
            {"method", std::string(method)},
            {"tool", std::string(tool)},
            {"decision", std::string(decision)}})
      .Increment();
}

void metrics::websocket_messages(std::string_view rule, std::string_view direction,
                                 std::string_view decision, std::uint64_t count) {
  if (count == 0) return;
  std::lock_guard lk(impl_->mu);  // once per connection and direction
  impl_->websocket
      .Add({{"rule", std::string(rule)},
            {"direction", std::string(direction)},
            {"decision", std::string(decision)}})
      .Increment(static_cast<double>(count));
}

void metrics::pool_reuse(bool hit) noexcept {
  (hit ? impl_->pool_hit : impl_->pool_miss).Increment();
}

void metrics::leaf_minted() noexcept {
  impl_->leaf_mints.Increment();
}
void metrics::leaf_cache_hit() noexcept {
  impl_->leaf_cache_hits.Increment();
}

void metrics::state_store(bool up, bool changed) {
  // Add() returns the one series (prometheus-cpp families are thread-safe); mode changes are
  // rare, so no pointer is cached.
  impl_->store_up.Add({}).Set(up ? 1 : 0);
  auto& changes = impl_->store_mode_changes.Add({});
  if (changed) changes.Increment();
}

void metrics::policy_loaded(bool ok, std::string_view version, std::string_view trigger) {
  std::string trigger_label(trigger.empty() ? "unknown" : policy_label(trigger));
  std::lock_guard lk(impl_->mu);
  impl_->reloads.Add({{"result", ok ? "success" : "failure"}, {"trigger", trigger_label}})
      .Increment();
  if (!ok) {
    impl_->reload_failures.Increment();
    return;
  }
  std::string version_label(version.empty() ? "unknown" : policy_label(version));
  prometheus::Labels labels{{"version", version_label}};
  // Only the version in force has a series, so `airlock_policy_info == 1` names it directly.
  if (impl_->policy_info_current && !impl_->policy_info.Has(labels)) {
    impl_->policy_info.Remove(impl_->policy_info_current);
    impl_->policy_info_current = nullptr;
  }
  impl_->policy_info_current = &impl_->policy_info.Add(labels);
  impl_->policy_info_current->Set(1);
  impl_->last_reload_success.SetToCurrentTime();
}

void metrics::restart_required(bool needed) noexcept {
  impl_->restart_required.Set(needed ? 1 : 0);
}

}  // namespace airlock::telemetry
