#include "proxy/worker.hpp"

namespace airlock::proxy {

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
  if (all) pool_.clear();
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
