#pragma once
// Internal to telemetry: the metrics object's state (metrics::impl), shared by metrics.cpp (the
// recording calls and the per-thread series cache) and metrics_families.cpp (every family the
// proxy exports, registered once, with its buckets, and the label values).

#include "telemetry/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace airlock::telemetry::metrics_detail {

// Label value for the agent and rule of request series beyond the series cap.
inline constexpr std::string_view overflow_label = "_overflow";
// Label value that replaces a value that is not valid UTF-8 (the text format requires UTF-8).
inline constexpr std::string_view invalid_label = "_invalid";

inline constexpr std::array<std::string_view, 4> decisions{"allow", "deny", "report", "error"};

// Request latencies: 0.5 ms (a cached deny) to 30 s (a slow upstream or a long body).
prometheus::Histogram::BucketBoundaries request_buckets();
// A tunnel lives as long as the agent's TLS connection: seconds to an hour.
prometheus::Histogram::BucketBoundaries tunnel_buckets();
// Connection set-up: loopback is sub-millisecond, a distant TLS handshake a few seconds, and
// the connect timeout is 5 s by default.
prometheus::Histogram::BucketBoundaries setup_buckets();

// core::errc names are the only reasons and upstream error kinds; anything else is "other".
std::string_view errc_label(std::string_view name) noexcept;
std::string_view policy_label(std::string_view value) noexcept;
std::string tuple_key(std::string_view agent, std::string_view rule, std::string_view decision,
                      std::string_view reason, std::string_view protocol);

// (Inline: the recording calls use them on every request.)
inline double seconds(std::chrono::microseconds d) noexcept {
  return d.count() < 0 ? 0.0 : static_cast<double>(d.count()) / 1e6;
}

inline std::size_t decision_index(std::string_view decision) noexcept {
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    if (decisions[i] == decision) return i;
  }
  return 3;  // anything unexpected is counted as "error" (fail closed, bounded labels)
}

// Appends `part` with its length in front, so that no two label tuples share a key whatever
// bytes the values contain (a separator character could appear inside a value).
inline void append_key_part(std::string& key, std::string_view part) {
  auto n = static_cast<std::uint32_t>(part.size());
  key.append(reinterpret_cast<const char*>(&n), sizeof n);
  key.append(part);
}

// The carrying protocol as a label of three values (a fixed cardinality): "h2", "ws" for a
// WebSocket connection, "h1" for anything else (HTTP/1.x requests and CONNECT tunnels).
inline std::string_view protocol_label(std::string_view protocol) {
  if (protocol == "h2") return "h2";
  if (protocol == "websocket") return "ws";
  return "h1";
}

struct request_series {
  prometheus::Counter* requests;
  prometheus::Counter* bytes_from_client;
  prometheus::Counter* bytes_to_client;
  prometheus::Histogram* duration;
  prometheus::Histogram* tunnel_duration;
};

}  // namespace airlock::telemetry::metrics_detail

namespace airlock::telemetry {

struct metrics::impl {
  // Registers every family (metrics_families.cpp).
  explicit impl(std::size_t max_series);

  metrics_detail::request_series* lookup(std::string_view agent, std::string_view rule,
                                         std::string_view decision, std::string_view reason,
                                         std::string_view protocol);
  metrics_detail::request_series create(std::string_view agent, std::string_view rule,
                                        std::string_view decision, std::string_view reason,
                                        std::string_view protocol);

  const std::uint64_t id;
  std::shared_ptr<prometheus::Registry> registry;
  const std::size_t max_request_series;

  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Histogram>& request_duration;
  prometheus::Family<prometheus::Histogram>& tunnel_duration;
  prometheus::Family<prometheus::Counter>& request_bytes;
  prometheus::Gauge& connections_active;
  prometheus::Counter& connections_total;
  prometheus::Gauge& tunnels_active;
  prometheus::Histogram& upstream_connect;
  prometheus::Histogram& upstream_tls;
  prometheus::Family<prometheus::Counter>& upstream_errors;
  prometheus::Family<prometheus::Counter>& breaker_trips;
  prometheus::Family<prometheus::Counter>& binary_requests;
  prometheus::Family<prometheus::Counter>& redactions;
  prometheus::Family<prometheus::Counter>& dlp;
  prometheus::Family<prometheus::Counter>& mcp;
  prometheus::Family<prometheus::Counter>& websocket;
  prometheus::Family<prometheus::Counter>& pool;
  prometheus::Counter& pool_hit;
  prometheus::Counter& pool_miss;
  prometheus::Counter& tls_pool_hit;
  prometheus::Counter& tls_pool_miss;
  prometheus::Counter& leaf_mints;
  prometheus::Counter& leaf_cache_hits;
  prometheus::Family<prometheus::Counter>& reloads;
  prometheus::Counter& reload_failures;
  prometheus::Family<prometheus::Gauge>& policy_info;
  prometheus::Gauge& last_reload_success;
  prometheus::Gauge& restart_required;
  prometheus::Family<prometheus::Gauge>& build_info;
  prometheus::Family<prometheus::Gauge>& store_up;
  prometheus::Family<prometheus::Counter>& store_mode_changes;
  prometheus::Gauge& audit_writable;
  prometheus::Counter& audit_dropped;
  prometheus::Counter& audit_write_errors;
  // The audit log's own totals as last exported; serialize() adds the difference.
  std::atomic<std::uint64_t> audit_dropped_seen{0};
  std::atomic<std::uint64_t> audit_write_errors_seen{0};
  std::array<prometheus::Histogram*, metrics_detail::decisions.size()> duration_by_decision{};
  std::array<prometheus::Histogram*, metrics_detail::decisions.size()>
      tunnel_duration_by_decision{};

  // Cold paths only: first sight of a label tuple on a thread, upstream errors, reloads.
  std::mutex mu;
  std::unordered_set<std::string> request_tuples;                               // guarded by mu
  std::unordered_map<std::string, prometheus::Counter*> upstream_error_series;  // guarded by mu
  prometheus::Gauge* policy_info_current = nullptr;                             // guarded by mu
};

}  // namespace airlock::telemetry
