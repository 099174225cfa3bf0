// `airlock proxy`: load the policy, open the admin listener and the audit log, start the
// workers, then serve until SIGTERM/SIGINT. SIGHUP (and POST /reload) reloads the policy.

#include "app/commands.hpp"
#include "app/proxy_admin.hpp"
#include "app/proxy_state.hpp"
#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "filters/approval/fleet.hpp"
#include "net/host.hpp"
#include "policy/loader.hpp"
#include "proxy/file_watches.hpp"
#include "proxy/policy_watcher.hpp"
#include "proxy/server.hpp"
#include "telemetry/admin_server.hpp"
#include "telemetry/audit_log.hpp"
#include "telemetry/event_hub.hpp"
#include "telemetry/metrics.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

namespace airlock::app {

std::string_view built_in_example_policy();  // generated from config/example.yaml
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::string_view usage =
    "usage: airlock proxy [--config FILE] [--threads N] [--listen ADDR:PORT]\n"
    "                     [--admin ADDR:PORT|off] [--log-level debug|info|warn|error]\n"
    "\n"
    "Runs the egress proxy with the policy in FILE (without --config: the built-in copy of\n"
    "config/example.yaml). Prints\n"
    "  listening proxy=ADDR:PORT admin=ADDR:PORT\n"
    "on stdout once it accepts connections. SIGHUP or POST /reload on the admin port reloads\n"
    "the policy; SIGTERM or SIGINT stops accepting, lets requests in flight finish, and exits.\n";

std::optional<tcp::endpoint> parse_admin(std::string_view text) {
  auto a = net::parse_authority(text, 0, true);
  if (a && a->host.is_ip()) return tcp::endpoint(a->host.address, a->port);
  auto colon = text.rfind(':');
  if (colon != std::string_view::npos && text.substr(colon + 1) == "0") {
    auto h = text.substr(0, colon);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    auto host = net::normalize_host(h);
    if (host && host->is_ip()) return tcp::endpoint(host->address, 0);
  }
  return std::nullopt;
}

std::string endpoint_text(const tcp::endpoint& ep) {
  return ep.address().is_v6() ? core::str_cat('[', ep.address().to_string(), "]:", ep.port())
                              : core::str_cat(ep.address().to_string(), ':', ep.port());
}

// Fills `options` and `admin_override` from the command line. An exit status when the
// command ends here (--help, or a usage error already printed), else nullopt.
std::optional<int> parse_proxy_args(args a, proxy::server_options& options,
                                    std::string& admin_override) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto arg = a[i];
    auto value = [&]() -> std::optional<std::string_view> {
      if (i + 1 < a.size()) return a[++i];
      std::fprintf(stderr, "airlock proxy: %.*s needs a value\n", static_cast<int>(arg.size()),
                   arg.data());
      return std::nullopt;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage.data(), stdout);
      return 0;
    } else if (arg == "--config") {
      auto v = value();
      if (!v) return 2;
      options.config_path = std::string(*v);
    } else if (arg == "--threads") {
      auto v = value();
      if (!v) return 2;
      unsigned n = 0;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc{} || end != v->data() + v->size() || n == 0 || n > 1024) {
        std::fputs("airlock proxy: --threads takes a number from 1 to 1024\n", stderr);
        return 2;
      }
      options.threads = n;
    } else if (arg == "--listen") {
      auto v = value();
      if (!v) return 2;
      options.listen_override = std::string(*v);
    } else if (arg == "--admin") {
      auto v = value();
      if (!v) return 2;
      admin_override = std::string(*v);
    } else if (arg == "--log-level") {
      auto v = value();
      if (!v) return 2;
      core::log_level level;
      if (!core::parse_log_level(*v, level)) {
        std::fputs("airlock proxy: --log-level takes debug, info, warn or error\n", stderr);
        return 2;
      }
      core::set_log_level(level);
    } else {
      std::fprintf(stderr, "airlock proxy: unknown option '%.*s'\n\n%s",
                   static_cast<int>(arg.size()), arg.data(), usage.data());
      return 2;
    }
  }
  return std::nullopt;
}

// The admin listener at `admin_text` (an IP address with a port), or nullptr with the reason
// printed; `failed` tells the two apart from "off".
std::unique_ptr<telemetry::admin_server> open_admin(
    asio::io_context& ioc, const std::string& admin_text, const admin_context& context,
    telemetry::event_hub& live_events, const policy::model::policy& model, bool& failed) {
  failed = false;
  if (admin_text.empty() || admin_text == "off") return nullptr;
  failed = true;
  auto ep = parse_admin(admin_text);
  if (!ep) {
    std::fprintf(stderr, "airlock proxy: admin address '%s' is not an IP address with a port\n",
                 admin_text.c_str());
    return nullptr;
  }
  telemetry::admin_handlers handlers = make_admin_handlers(context);
  handlers.events = &live_events;
  handlers.host_names = model.listen.admin_hosts;  // read at start, like listen.admin
  std::unique_ptr<telemetry::admin_server> admin;
  try {
    admin = std::make_unique<telemetry::admin_server>(ioc, *ep, std::move(handlers));
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "airlock proxy: cannot listen on admin %s: %s\n", admin_text.c_str(),
                 e.code().message().c_str());
    return nullptr;
  }
  failed = false;
  warn_if_admin_exposed(admin->local_endpoint(), !model.operators.empty());
  return admin;
}

// state: redis: held requests listed and decided from any replica.
std::unique_ptr<filters::approval::fleet> start_fleet(filters::rate_limit::shared_store* store,
                                                      proxy::server& server,
                                                      const policy::model::policy& model) {
  if (!store) return nullptr;
  filters::approval::fleet_options fo;
  fo.replica = filters::approval::fleet::default_replica();
  fo.key_prefix = store->settings().key_prefix;
  fo.store_timeout = model.state.timeout;
  auto fleet = std::make_unique<filters::approval::fleet>(store->client(), server.approvals(), fo);
  fleet->start();
  AIRLOCK_LOG(info, "approvals", "this replica is '", fo.replica, "' in the shared store");
  return fleet;
}

// The policy in force at start-up: the file, or the example compiled into the binary
// (config/example.yaml) so that `airlock proxy` alone starts a useful, safe proxy. Errors are
// printed; the result is not ok() then.
policy::load_result load_initial_policy(proxy::server_options& options) {
  if (options.config_path.empty()) {
    options.built_in_policy = std::string(built_in_example_policy());
    AIRLOCK_LOG(info, "proxy", "no --config: using the built-in example policy");
  }
  auto initial = options.config_path.empty()
                     ? policy::load_string(options.built_in_policy, "<built-in example policy>")
                     : policy::load_file(options.config_path);
  if (!initial.ok()) {
    for (const auto& e : initial.errors)
      std::fprintf(stderr, "%s\n", e.to_string().c_str());
    std::fprintf(stderr, "airlock proxy: policy %s refused\n", options.config_path.c_str());
    return initial;
  }
  for (const auto& w : initial.warnings)
    AIRLOCK_LOG(warn, "policy", w.to_string());
  return initial;
}

// A reload from `source`; the watched files then follow the policy in force (a failed reload
// keeps the old one, and its files).
void reload_and_follow(proxy::server& server, proxy::file_watches& named_files,
                       std::string_view source) {
  std::string message;
  server.reload(source, message);
  named_files.follow(proxy::file_watches::files_of(server.current_policy()->model()));
}

// An access request that nobody decided ends at its deadline, recorded then, not when someone
// next looks at the approvals.
void sweep_approvals_each_second(asio::steady_timer& timer, proxy::server& server) {
  timer.expires_after(std::chrono::seconds(1));
  timer.async_wait([&timer, &server](const boost::system::error_code& ec) {
    if (ec) return;
    server.approvals().sweep();
    sweep_approvals_each_second(timer, server);
  });
}

// The line tests and scripts wait for on stdout, once both listeners accept connections.
void announce_listening(const proxy::server& server, const telemetry::admin_server* admin,
                        const std::string& config_path) {
  std::printf("listening proxy=%s admin=%s\n", endpoint_text(server.endpoint()).c_str(),
              admin != nullptr ? endpoint_text(admin->local_endpoint()).c_str() : "off");
  std::fflush(stdout);
  AIRLOCK_LOG(info, "proxy", "serving on ", endpoint_text(server.endpoint()), " with policy ",
              server.current_policy()->version().substr(0, 12), " from ",
              config_path.empty() ? "the built-in example" : config_path);
}

}  // namespace

int cmd_proxy(args a) {
  proxy::server_options options;
  std::string admin_override;
  if (const auto done = parse_proxy_args(a, options, admin_override)) return *done;
  // The one load at start-up: it says what must exist before the workers (admin, audit, where
  // to listen) and becomes the policy in force.
  const auto initial = load_initial_policy(options);
  if (!initial.ok()) return 1;
  const auto& model = initial.policy->model();

  // GET /events: each audit line as it is written. Declared before the audit log and the
  // server, so that it outlives every writer.
  telemetry::event_hub live_events;
  std::string audit_error;
  auto audit = telemetry::audit_log::open(model.audit.path, audit_error, model.audit.ocsf);
  if (!audit) {
    std::fprintf(stderr, "airlock proxy: audit log: %s\n", audit_error.c_str());
    return 1;
  }
  audit->set_live_events(&live_events);
  telemetry::metrics metrics(AIRLOCK_VERSION);
  // state: redis: connects in the background (on_unavailable applies until it is up). Before
  // the server, which binds its plans to it, so that it outlives them.
  const auto store = app::make_shared_store(*initial.policy, metrics);
  options.store = store.get();
  options.store_wait = 4 * initial.policy->model().state.timeout;

  asio::io_context main_ioc{1};
  std::string admin_text = admin_override.empty() ? model.listen.admin : admin_override;
  options.admin_overridden = !admin_override.empty();
  // After a reload from another thread (the admin port): the watched files follow the policy.
  std::function<void()> after_reload;
  proxy::server* server_ptr = nullptr;
  filters::approval::fleet* fleet_ptr = nullptr;
  std::atomic<bool> ready{false};
  const admin_context context{metrics, ready, store, server_ptr, after_reload, *audit, fleet_ptr};
  bool admin_failed = false;
  auto admin = open_admin(main_ioc, admin_text, context, live_events, model, admin_failed);
  if (admin_failed) return 1;
  if (admin) options.extra_own_endpoints.push_back(admin->local_endpoint());

  // Signals are caught from here on, before anyone can learn our port and send one.
  asio::signal_set signals(main_ioc, SIGINT, SIGTERM, SIGHUP);
  proxy::server server(options, audit.get(), &metrics);
  // Edits of the policy file (including editors' rename-replace and Kubernetes ConfigMap
  // swaps) reload it, like SIGHUP and POST /reload do.
  // So do edits of the files it names (secrets, the CA, the upstream CA bundle): the reload
  // reads them again. The set of those follows the policy in force.
  std::optional<proxy::policy_watcher> watcher;
  proxy::file_watches named_files(
      main_ioc, [&server, &named_files] { reload_and_follow(server, named_files, "file"); });
  if (!options.config_path.empty())
    watcher.emplace(main_ioc, options.config_path,
                    [&server, &named_files] { reload_and_follow(server, named_files, "file"); });
  std::vector<std::string> errors;
  if (!server.start(initial.policy, errors)) {
    for (const auto& e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    std::fprintf(stderr, "airlock proxy: not started\n");
    return 1;
  }
  server_ptr = &server;
  // After the server (its registry) and destroyed before it.
  const auto approvals_fleet = start_fleet(store.get(), server, initial.policy->model());
  fleet_ptr = approvals_fleet.get();
  named_files.follow(proxy::file_watches::files_of(server.current_policy()->model()));
  after_reload = [&] {
    asio::post(main_ioc, [&] {
      named_files.follow(proxy::file_watches::files_of(server.current_policy()->model()));
    });
  };
  if (admin) admin->start();
  ready.store(true);

  announce_listening(server, admin.get(), options.config_path);

  asio::steady_timer sweep(main_ioc);
  sweep_approvals_each_second(sweep, server);
  std::thread stopper;
  std::function<void(const boost::system::error_code&, int)> on_signal;
  on_signal = [&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      reload_and_follow(server, named_files, "signal");
      audit->reopen();
      signals.async_wait(on_signal);
      return;
    }
    AIRLOCK_LOG(info, "proxy", "signal ", sig, ": draining and stopping");
    ready.store(false);
    server.begin_drain();
    stopper = std::thread([&] {
      server.shutdown();
      asio::post(main_ioc, [&] {
        if (watcher) watcher->stop();
        named_files.stop();
        if (admin) admin->stop();
        signals.cancel();
        sweep.cancel();
      });
    });
  };
  signals.async_wait(on_signal);
  main_ioc.run();
  // Stopping already: another SIGTERM (an orchestrator's, a supervisor's repeat) must not end
  // the process by the default action while it tears down, turning a clean exit into death by
  // signal. Asio puts the default action back when the set lets go of its signals.
  signals.clear();
  for (const int sig : {SIGINT, SIGTERM, SIGHUP})
    std::signal(sig, SIG_IGN);
  if (stopper.joinable()) stopper.join();
  audit->flush();
  AIRLOCK_LOG(info, "proxy", "stopped");
  return 0;
}

}  // namespace airlock::app
