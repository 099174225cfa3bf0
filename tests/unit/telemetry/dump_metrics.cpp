// Prints the Prometheus exposition of a metrics object on which every member function was
// called once, so that every family has a series. check_dashboard.py reads the metric names
// from it: the dashboard and the alerts can only name what this code exports.
#include "telemetry/metrics.hpp"

#include <iostream>

int main() {
  using namespace std::chrono_literals;
  airlock::telemetry::metrics m("0.0.0-dump");
  m.request_finished("default", "pypi", "allow", "ok", 3ms, 100, 2000);
  m.request_finished("default", "", "deny", "host_denied", 200us, 0, 0);
  m.request_finished("default", "github", "allow", "ok", 30s, 10, 20, /*tunnel=*/true);
  m.connection_opened();
  m.tunnel_opened();
  m.upstream_connect_time(2ms);
  m.upstream_tls_time(20ms);
  m.upstream_error("dns_error");
  m.pool_reuse(true);
  m.pool_reuse(false);
  m.dlp_finding("web", "aws-access-key", "query", "block");
  m.leaf_minted();
  m.leaf_cache_hit();
  m.policy_loaded(true, "v1", "startup");
  m.policy_loaded(false, "", "sighup");
  m.state_store(false, false);
  m.state_store(true, true);
  m.audit_log_state(false, 3, 7);
  std::cout << m.serialize();
  return 0;
}
