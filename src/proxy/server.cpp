#include "proxy/server.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"
#include "core/str_cat.hpp"
#include "filters/approval/overlay.hpp"
#include "net/host.hpp"
#include "proxy/policy_diff.hpp"
#include "proxy/relay_listener.hpp"
#include "proxy/worker_start.hpp"
#include "telemetry/audit_event.hpp"
#include "telemetry/audit_log.hpp"
#include "telemetry/metrics.hpp"
#include "tls/leaf_cache.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <boost/asio/local/stream_protocol.hpp>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <future>
#include <memory>
#include <thread>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;

std::optional<tcp::endpoint> parse_listen(std::string_view text) {
  auto a = net::parse_authority(text, 0, true);
  if (!a) {
    // parse_authority refuses port 0, which means "any free port" here.
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.substr(colon + 1) != "0") return std::nullopt;
    auto host = net::normalize_host(text.substr(0, colon));
    if (!host || !host->is_ip()) {
      // Accept [v6]:0 too.
      auto h = text.substr(0, colon);
      if (h.size() > 2 && h.front() == '[' && h.back() == ']')
        host = net::normalize_host(h.substr(1, h.size() - 2));
      if (!host || !host->is_ip()) return std::nullopt;
    }
    return tcp::endpoint(host->address, 0);
  }
  if (!a->host.is_ip()) return std::nullopt;
  return tcp::endpoint(a->host.address, a->port);
}

server::server(server_options options, telemetry::audit_log* audit, telemetry::metrics* metrics)
    : options_(std::move(options)) {
  shared_.audit = audit;
  shared_.metrics = metrics;
}

server::~server() {
  shutdown();
}

policy::load_result server::load() const {
  if (options_.config_path.empty())
    return policy::load_string(options_.built_in_policy, "<built-in example policy>");
  return policy::load_file(options_.config_path);
}

bool server::start(std::shared_ptr<const policy::snapshot> initial,
                   std::vector<std::string>& errors) {
  // The one load at start-up (the caller's): it says where to listen. The proxy's own
  // endpoints, known once bound, are refused by a guard of their own (shared_state::own_guard)
  // rather than by loading the policy again.
  bound_listen_ = initial->model().listen;
  std::string listen_text =
      options_.listen_override.empty() ? initial->model().listen.proxy : options_.listen_override;
  auto listen = parse_listen(listen_text);
  if (!listen) {
    errors.push_back(
        core::str_cat("listen address '", listen_text, "' is not an IP address with a port"));
    return false;
  }

  unsigned threads = options_.threads ? options_.threads : std::thread::hardware_concurrency();
  if (threads == 0) threads = 1;
  try {
    workers_ = listen_workers(shared_, *listen, threads, endpoint_);
  } catch (const boost::system::system_error& e) {
    errors.push_back(core::str_cat("cannot listen on ", listen_text, ": ", e.code().message()));
    workers_.clear();
    return false;
  }
  own_endpoints_.insert(own_endpoints_.begin(), endpoint_);
  own_endpoints_.insert(own_endpoints_.end(), options_.extra_own_endpoints.begin(),
                        options_.extra_own_endpoints.end());
  if (const auto& relay = initial->model().listen.relay; !relay.empty()) {
    std::string relay_error;
    if (!start_relay_listener(relay, initial->model().listen.relay_group, relay_error)) {
      errors.push_back(relay_error);
      return false;
    }
    AIRLOCK_LOG(info, "proxy", "relay listener on ", relay);
  }
  shared_.own_guard =
      std::make_unique<const net::address_guard>(false, std::vector<net::cidr>{}, own_endpoints_);

  rates_.use_store(options_.store);
  approvals_.set_event_sink([audit = shared_.audit](std::string_view event, std::uint64_t id,
                                                    const filters::approval::request_info& r,
                                                    std::string_view outcome, std::string_view by) {
    // Names and the target only; an access request's reason stays in GET /approvals.
    AIRLOCK_LOG(info, "approvals", event, ": agent ", r.agent, " ", r.method, " ", r.host, ":",
                r.port, " -> ", outcome, by.empty() ? "" : " by ", by);
    // A decision is audited once, as the operator's action (app/cmd_proxy_admin.cpp); the
    // rest of a hold's life is audited here.
    if (audit == nullptr || event == "decided") return;
    telemetry::audit_event e;
    e.time = std::chrono::system_clock::now();
    e.type = "approval";
    e.action = event;
    e.agent = r.agent;
    e.method = r.method;
    e.host = r.host;
    e.port = r.port;
    e.path = r.path;
    e.approval_id = id;
    e.outcome = outcome;
    e.detail = r.rule;
    audit->write(e);
  });
  approvals_.set_permanent_writer(
      [this](const filters::approval::request_info& r, bool same_method, std::string& message) {
        return write_permanent(r, same_method, message);
      });
  // The kill switch and what is held: a stop (here or from another replica) ends the agent's
  // holds, and a held request's session asks again when it takes its verdict.
  approvals_.set_stop_check([this](std::string_view agent) { return rates_.is_stopped(agent); });
  rates_.set_stop_listener([this](std::string_view agent) {
    if (const auto n = approvals_.stop_agent(agent); n > 0)
      AIRLOCK_LOG(warn, "approvals", "agent ", agent, ": ", n,
                  " held request(s) refused (stopped)");
  });
  std::string error;
  auto active = build_active(initial, error);
  if (!active) {
    errors.push_back(error);
    return false;
  }
  shared_.active.store(std::move(active));
  if (options_.store != nullptr) {
    // Before the first request: a replica that restarts must not serve an agent the fleet
    // stopped. A store that is down now is read when it comes back.
    fleet_ = std::make_unique<filters::rate_limit::fleet_control>(*options_.store, rates_);
    if (!fleet_->start(options_.store_wait))
      AIRLOCK_LOG(warn, "state", "the fleet's stopped agents could not be read within ",
                  options_.store_wait.count(),
                  " ms; they are applied once the store answers (under on_unavailable: deny, "
                  "every agent is refused until then; under local, they are served)");
  }
  {
    std::lock_guard lock(reload_mutex_);
    status_.version = initial->version();
    status_.source =
        options_.config_path.empty() ? "<built-in example policy>" : options_.config_path;
    status_.loaded_at = status_.last_attempt = std::chrono::system_clock::now();
  }
  if (shared_.metrics) shared_.metrics->policy_loaded(true, initial->version(), "startup");

  run_workers(workers_);
  return true;
}

bool server::reload(std::string_view trigger, std::string& message) {
  std::lock_guard lock(reload_mutex_);
  status_.last_attempt = std::chrono::system_clock::now();
  auto result = load();
  for (const auto& w : result.warnings)
    AIRLOCK_LOG(warn, "policy", w.to_string());
  if (!result.ok()) {
    message.clear();
    for (const auto& e : result.errors)
      message += e.to_string() + "\n";
    status_.last_error = message;
    if (shared_.metrics) shared_.metrics->policy_loaded(false, "", trigger);
    AIRLOCK_LOG(warn, "policy", "reload (", trigger, ") refused; the previous policy stays:\n",
                message);
    return false;
  }
  std::string build_error;
  auto active = build_active(result.policy, build_error);
  if (!active) {
    message = build_error;
    status_.last_error = message;
    if (shared_.metrics) shared_.metrics->policy_loaded(false, "", trigger);
    AIRLOCK_LOG(warn, "policy", "reload (", trigger,
                ") refused; the previous policy stays: ", message);
    return false;
  }
  auto old = shared_.current();
  const std::string changes = describe_changes(*old, *result.policy);
  if (old->model().state.address != result.policy->model().state.address ||
      old->model().state.backend != result.policy->model().state.backend)
    AIRLOCK_LOG(warn, "policy", "the state section changed; it takes effect at the next restart");
  shared_.active.store(std::move(active));
  status_.version = result.policy->version();
  status_.loaded_at = status_.last_attempt;
  status_.last_error.clear();
  status_.last_changes = changes;
  if (shared_.metrics) shared_.metrics->policy_loaded(true, result.policy->version(), trigger);
  message = core::str_cat("policy ", result.policy->version().substr(0, 12), " loaded (", trigger,
                          ")", changes.empty() ? "" : "; ", changes);
  AIRLOCK_LOG(info, "policy", message);
  // listen.* is read at start only: say so, in the log, the answer, GET /policy and a metric.
  status_.restart_needed =
      listen_changes(bound_listen_, result.policy->model().listen,
                     !options_.listen_override.empty(), options_.admin_overridden);
  if (shared_.metrics) shared_.metrics->restart_required(!status_.restart_needed.empty());
  if (!status_.restart_needed.empty()) {
    AIRLOCK_LOG(warn, "policy", "restart needed: ", status_.restart_needed,
                " (listen.* is read at start only; still listening as started)");
    message += core::str_cat("; restart needed: ", status_.restart_needed);
  }
  return true;
}

std::shared_ptr<const active_policy> server::build_active(
    std::shared_ptr<const policy::snapshot> snapshot, std::string& error) {
  auto next = std::make_shared<active_policy>();
  // TLS interception, rebuilt only when the policy's CA files change (the leaf cache stays warm
  // across ordinary edits).
  const auto& files = snapshot->model().tls;
  if (!files.ca_cert.empty() && !files.ca_key.empty()) {
    auto current = shared_.active.load();
    if (current && current->tls && current->tls->built_from(files)) {
      next->tls = current->tls;
    } else {
      std::string tls_error;
      next->tls = interception::create(files, shared_.metrics, tls_error);
      if (!next->tls) {
        error = core::str_cat("tls: ", tls_error);
        return nullptr;
      }
    }
  }
  // The filters, bound to the rate-limit state that outlives snapshots.
  filters::lasting_state lasting{&rates_, &approvals_, &retired_};
  auto built = filters::pipeline::build(std::move(snapshot), lasting);
  if (!built.built) {
    error.clear();
    for (const auto& e : built.errors)
      error += e;
    return nullptr;
  }
  next->pipeline = std::move(built.built);
  return next;
}

void server::shutdown() {
  // Held requests are refused at once: their sessions end instead of waiting out the drain.
  approvals_.shutdown();
  if (stopped_ || workers_.empty()) return;
  stopped_ = true;
  shared_.draining.store(true);
  if (relay_) {
    // No new relay connections; the ones already handed over drain with the rest.
    relay_->ioc.stop();
    if (relay_->thread.joinable()) relay_->thread.join();
    boost::system::error_code ignored;
    if (relay_->unix_acceptor) relay_->unix_acceptor->close(ignored);
    if (relay_->tcp_acceptor) relay_->tcp_acceptor->close(ignored);
    if (!relay_->unix_path.empty()) ::unlink(relay_->unix_path.c_str());
  }
  // Started workers imply a policy in force, unless start() failed after binding.
  const auto active = shared_.active.load();
  const auto drain =
      active ? active->snapshot().limits().drain_timeout : std::chrono::milliseconds(0);
  // Stop accepting and close idle keep-alive connections at once.
  for (auto& w : workers_) {
    asio::post(w->context(), [&w] {
      boost::system::error_code ignored;
      w->acceptor->close(ignored);
      w->close_sessions(false);
      w->pool().clear();
      w->tls_pool().clear();
    });
  }
  // In-flight exchanges finish on their own; each session ends after its current exchange.
  auto deadline = std::chrono::steady_clock::now() + drain;
  for (;;) {
    std::size_t open = 0;
    for (auto& w : workers_) {
      // Shared with the posted step: a busy worker may run it after this wait gave up, and it
      // must then set a promise that is still there (not one on a stack frame long gone).
      auto p = std::make_shared<std::promise<std::size_t>>();
      auto f = p->get_future();
      asio::post(w->context(), [&w, p] {
        w->close_sessions(false);
        p->set_value(w->session_count());
      });
      if (f.wait_for(std::chrono::seconds(1)) == std::future_status::ready)
        open += f.get();
      else
        open += 1;
    }
    if (open == 0 || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& w : workers_)
    asio::post(w->context(), [&w] { w->close_sessions(true); });
  // Let the closed sessions unwind; run() returns once nothing is left, and stop() after a
  // grace period covers anything that still is.
  for (auto& w : workers_)
    asio::post(w->context(), [&w] { w->release_work(); });
  auto unwind_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& w : workers_) {
    while (!w->context().stopped() && std::chrono::steady_clock::now() < unwind_deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    w->context().stop();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

}  // namespace airlock::proxy
