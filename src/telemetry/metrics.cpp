#include "telemetry/metrics.hpp"

#include "telemetry/metrics_impl.hpp"

#include <prometheus/text_serializer.h>

#include <string>
#include <unordered_map>

namespace airlock::telemetry {

using namespace metrics_detail;
using prometheus::Counter;
using prometheus::Gauge;

namespace {

// Per-thread map from the raw label tuple to the series' pointers: the hot path neither locks
// nor hashes a prometheus::Labels map once a thread has seen a tuple.
struct request_cache {
  std::uint64_t owner = 0;
  std::string key;
  std::unordered_map<std::string, request_series> map;
};
constexpr std::size_t max_cached_per_thread = 4096;

}  // namespace

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

void metrics::pool_reuse(bool hit, bool tls) noexcept {
  if (tls)
    (hit ? impl_->tls_pool_hit : impl_->tls_pool_miss).Increment();
  else
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

namespace {
// Raises `counter` to `total` (a running total kept elsewhere): concurrent scrapes each add
// only what no other one added.
void raise_to(prometheus::Counter& counter, std::atomic<std::uint64_t>& seen,
              std::uint64_t total) noexcept {
  std::uint64_t prev = seen.load();
  while (prev < total && !seen.compare_exchange_weak(prev, total)) {
  }
  if (prev < total) counter.Increment(static_cast<double>(total - prev));
}
}  // namespace

void metrics::audit_log_state(bool writable, std::uint64_t dropped,
                              std::uint64_t write_errors) noexcept {
  impl_->audit_writable.Set(writable ? 1 : 0);
  raise_to(impl_->audit_dropped, impl_->audit_dropped_seen, dropped);
  raise_to(impl_->audit_write_errors, impl_->audit_write_errors_seen, write_errors);
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
