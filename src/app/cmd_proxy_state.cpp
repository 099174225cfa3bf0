#include "app/proxy_state.hpp"

#include "policy/snapshot.hpp"
#include "state/client.hpp"
#include "telemetry/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>

namespace airlock::app {

std::unique_ptr<filters::rate_limit::shared_store> make_shared_store(const policy::snapshot& policy,
                                                                     telemetry::metrics& metrics) {
  const policy::model::state_store& s = policy.model().state;
  if (!s.shared()) return nullptr;

  auto& up = prometheus::BuildGauge()
                 .Name("airlock_state_store_up")
                 .Help("1 when the shared state store (state: redis) is reachable, else 0")
                 .Register(metrics.registry())
                 .Add({});
  auto& changes = prometheus::BuildCounter()
                      .Name("airlock_state_store_mode_changes_total")
                      .Help("Changes between the shared store and on_unavailable, either way")
                      .Register(metrics.registry())
                      .Add({});

  state::client_options o;
  o.host = s.host;
  o.port = s.port;
  o.unix_path = s.unix_path;
  o.username = s.username;
  if (!s.password_secret.empty())
    if (const auto* secret = policy.find_secret(s.password_secret))
      o.password = std::string(secret->value.reveal());
  o.timeout = s.timeout;
  bool first = true;
  o.on_mode_change = [&up, &changes, first](bool is_up) mutable {
    up.Set(is_up ? 1 : 0);
    if (!first) changes.Increment();
    first = false;
  };

  filters::rate_limit::store_settings settings;
  settings.key_prefix = s.key_prefix;
  settings.replicas = s.replicas;
  settings.deny_when_unavailable = s.on_unavailable == policy::model::state_fallback::deny;
  return std::make_unique<filters::rate_limit::shared_store>(std::move(o), std::move(settings));
}

}  // namespace airlock::app
