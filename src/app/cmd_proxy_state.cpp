#include "app/proxy_state.hpp"

#include "policy/snapshot.hpp"
#include "state/client.hpp"
#include "telemetry/metrics.hpp"

namespace airlock::app {

std::unique_ptr<filters::rate_limit::shared_store> make_shared_store(const policy::snapshot& policy,
                                                                     telemetry::metrics& metrics) {
  const policy::model::state_store& s = policy.model().state;
  if (!s.shared()) return nullptr;

  state::client_options o;
  o.host = s.host;
  o.port = s.port;
  o.unix_path = s.unix_path;
  o.username = s.username;
  if (!s.password_secret.empty())
    if (const auto* secret = policy.find_secret(s.password_secret))
      o.password = std::string(secret->value.reveal());
  o.timeout = s.timeout;
  if (s.tls.enabled) o.tls = state::tls_options{s.tls.ca, s.tls.server_name, s.tls.cert, s.tls.key};
  bool first = true;
  o.on_mode_change = [&metrics, first](bool is_up) mutable {
    metrics.state_store(is_up, !first);
    first = false;
  };

  filters::rate_limit::store_settings settings;
  settings.key_prefix = s.key_prefix;
  settings.replicas = s.replicas;
  settings.deny_when_unavailable = s.on_unavailable == policy::model::state_fallback::deny;
  return std::make_unique<filters::rate_limit::shared_store>(std::move(o), std::move(settings));
}

}  // namespace airlock::app
