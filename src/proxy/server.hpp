#pragma once
// The running proxy: one worker thread per core, each with its own io_context and its own
// SO_REUSEPORT acceptor on the proxy port (the kernel spreads connections across them), plus
// the policy holder that reloads swap.
//
// Thread safety: start() and shutdown() from one controlling thread; reload() from any
// thread (it serialises itself).

#include "filters/approval/registry.hpp"
#include "filters/rate_limit/fleet_control.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/redaction/retired_secrets.hpp"
#include "policy/loader.hpp"
#include "proxy/worker.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace airlock::proxy {

struct server_options {
  std::string config_path;        // the policy file (reloaded on demand)
  std::string built_in_policy;    // used instead of a file when config_path is empty
  unsigned threads = 0;           // 0 = one per core
  std::string listen_override;    // replaces listen.proxy when not empty
  bool admin_overridden = false;  // the command line chose the admin address
  // Other endpoints of this process (the admin listener) the address guard must refuse.
  std::vector<boost::asio::ip::tcp::endpoint> extra_own_endpoints;
  // state: redis: the store the replicas share (outlives the server); null for state: local.
  filters::rate_limit::shared_store* store = nullptr;
  // How long start() waits for the fleet's stored stops and suspensions (state: redis).
  std::chrono::milliseconds store_wait{1'000};
};

struct reload_status {
  std::string version;
  std::string source;
  std::chrono::system_clock::time_point loaded_at;
  std::string last_error;  // empty when the last attempt succeeded
  std::chrono::system_clock::time_point last_attempt;
  // listen.* addresses the policy in force changed since start (policy_diff.hpp
  // listen_changes): they need a restart. Empty when none.
  std::string restart_needed;
  // What the last successful reload changed (policy_diff.hpp describe_changes); empty before
  // the first reload or when it changed nothing.
  std::string last_changes;
  // The interception CA in force (SHA-256 of its certificate, colon hex); empty without one.
  std::string ca_fingerprint;
};

class server {
 public:
  server(server_options options, telemetry::audit_log* audit, telemetry::metrics* metrics);
  ~server();

  // Binds the proxy port for `initial` (the policy as loaded by the caller: the only load at
  // start-up) and starts the workers. On failure returns false and fills errors (one line each).
  bool start(std::shared_ptr<const policy::snapshot> initial, std::vector<std::string>& errors);

  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
  std::shared_ptr<const policy::snapshot> current_policy() const { return shared_.current(); }

  // Loads the file again; on success swaps the snapshot (requests in flight keep theirs).
  // message: a summary of what changed, or the load errors.
  bool reload(std::string_view trigger, std::string& message);
  reload_status status() const;

  // The kill switch and the agents' control state, for the admin port. `fleet_pending`: applied
  // here, but the shared store (state: redis) did not accept it within store_wait: it is kept
  // and sent to the fleet when the store is back (shared_store::publish_stop).
  enum class control_outcome { not_found, done, fleet_pending };
  control_outcome agent_control(std::string_view agent, bool stop, std::string& message);
  std::string agents_json() const;

  // Held requests, access requests and grants (filters/approval/registry.hpp), for the admin
  // port and the reserved request-access endpoint.
  filters::approval::registry& approvals() noexcept { return approvals_; }

  // Stops accepting, lets in-flight exchanges finish for up to drain_timeout, then closes
  // what is left and joins the workers.
  void shutdown();
  // The first step of shutdown, safe to call from a signal handler's completion: from now on
  // no new request starts.
  void begin_drain() noexcept { shared_.draining.store(true); }

 private:
  policy::load_result load() const;
  // Binds listen.relay (a Unix socket or host:port) when the policy names one.
  bool start_relay_listener(const std::string& where, const std::string& group, std::string& error);

  // approvals.overlay: writes a permanent approval as a rule of the overlay file, then reloads
  // (and puts the file back as it was when the policy with it does not load).
  bool write_permanent(const filters::approval::request_info& r, bool same_method,
                       std::string& message);

  // The one builder of the policy in force: the snapshot's filters (bound to the lasting
  // rate-limit state) and its TLS interception. Null, with `error` set, when either cannot be
  // built: the policy is then refused like one that fails to load.
  std::shared_ptr<const active_policy> build_active(
      std::shared_ptr<const policy::snapshot> snapshot, std::string& error);

  server_options options_;
  shared_state shared_;
  filters::rate_limit::registry rates_;
  // Held requests outlive snapshots too; before workers_, so destroyed after their sessions.
  filters::approval::registry approvals_;
  // Values reloads rotated out, still redacted for a while (retired_secrets.hpp).
  filters::redaction::retired_secrets retired_;
  // state: redis: stops, resumes and breaker trips shared with the other replicas. After
  // rates_, so destroyed before it.
  std::unique_ptr<filters::rate_limit::fleet_control> fleet_;
  std::vector<std::unique_ptr<worker>> workers_;
  boost::asio::ip::tcp::endpoint endpoint_;
  policy::model::listen bound_listen_;  // listen.* as read at start
  std::vector<boost::asio::ip::tcp::endpoint> own_endpoints_;
  mutable std::mutex reload_mutex_;
  reload_status status_;
  bool stopped_ = false;
  // The relay listener runs on its own thread and hands each connection to a worker.
  struct relay_listener;
  std::unique_ptr<relay_listener> relay_;
};

}  // namespace airlock::proxy
