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
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::telemetry {

class metrics {
 public:
  explicit metrics(std::string_view build_version);
  ~metrics();
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  prometheus::Registry& registry() noexcept;
  // Prometheus text exposition format of everything registered.
  std::string serialize() const;

  // One finished request or tunnel. decision: "allow" | "deny" | "report" | "error".
  // reason: core::errc name ("ok" when allowed). rule may be empty (label value "none").
  void request_finished(std::string_view agent, std::string_view rule, std::string_view decision,
                        std::string_view reason, std::chrono::microseconds duration,
                        std::uint64_t bytes_from_client, std::uint64_t bytes_to_client);

  void connection_opened() noexcept;  // client connections (gauge + counter)
  void connection_closed() noexcept;
  void tunnel_opened() noexcept;  // CONNECT tunnels, opaque or inspected (gauge)
  void tunnel_closed() noexcept;

  // Upstream connection set-up; kind is an errc name for errors ("dns_error", ...).
  void upstream_connect_time(std::chrono::microseconds d) noexcept;
  void upstream_tls_time(std::chrono::microseconds d) noexcept;
  void upstream_error(std::string_view kind);
  void pool_reuse(bool hit) noexcept;  // plain-HTTP upstream connection reused or new

  void leaf_minted() noexcept;  // TLS interception
  void leaf_cache_hit() noexcept;

  // Policy reloads. ok=false counts a failure; on success version becomes the info metric
  // airlock_policy_info{version="..."} 1 (and the previous version's series is removed).
  void policy_loaded(bool ok, std::string_view version, std::string_view trigger);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace airlock::telemetry
