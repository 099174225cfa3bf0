#pragma once
// `airlock proxy`'s admin port handlers (telemetry::admin_handlers): what each endpoint reads
// from or does to the server, who may act (the policy's `operators:`, admin_auth.hpp), and
// one audit record per operator action (telemetry/audit_event.hpp).

#include "telemetry/admin_server.hpp"

#include <atomic>
#include <functional>
#include <memory>

namespace airlock::proxy {
class server;
}
namespace airlock::telemetry {
class audit_log;
class metrics;
}  // namespace airlock::telemetry
namespace airlock::filters::rate_limit {
class shared_store;
}
namespace airlock::filters::approval {
class fleet;
}

namespace airlock::app {

// References to what cmd_proxy owns; each outlives the admin server. `server` is null until
// the proxy has started (the handlers answer "not started" meanwhile).
struct admin_context {
  telemetry::metrics& metrics;
  std::atomic<bool>& ready;
  const std::unique_ptr<filters::rate_limit::shared_store>& store;
  proxy::server*& server;
  std::function<void()>& after_reload;
  telemetry::audit_log& audit;
  // state: redis: approvals across the replicas (null until started, or with state: local).
  filters::approval::fleet*& approvals_fleet;
};

telemetry::admin_handlers make_admin_handlers(const admin_context& ctx);

// At start: a warning when the admin port is reachable beyond loopback and the policy names no
// operators (then only loopback peers may act, but anyone there may read).
void warn_if_admin_exposed(const boost::asio::ip::tcp::endpoint& admin, bool operators);

}  // namespace airlock::app
