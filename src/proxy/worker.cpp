#include "proxy/worker.hpp"

#include "telemetry/audit_log.hpp"

namespace airlock::proxy {

bool shared_state::audit_refuses(const policy::snapshot& snap) const noexcept {
  return audit != nullptr && snap.model().audit.deny_on_failure && !audit->writable();
}

void worker::close_sessions(bool all) {
  for (auto& e : sessions_) {
    if (!all && !e.idle) continue;
    boost::system::error_code ignored;
    if (e.client) e.client->cancel(ignored);
    if (all) {
      if (e.client) e.client->close(ignored);
      if (e.upstream) e.upstream->close(ignored);
    }
  }
  if (all) {
    pool_.clear();
    tls_pool_.clear();
  }
}

void worker::keep_timer_floor() {
  floor_.expires_after(timer_floor_period);
  floor_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) keep_timer_floor();
  });
}

std::size_t worker::cut_tunnels(std::string_view agent) {
  std::size_t cut = 0;
  for (auto& e : sessions_) {
    if (e.tunnel_agent.empty() || e.tunnel_agent != agent) continue;
    boost::system::error_code ignored;
    if (e.client) e.client->close(ignored);
    if (e.upstream) e.upstream->close(ignored);
    e.cut = true;
    ++cut;
  }
  return cut;
}

}  // namespace airlock::proxy
