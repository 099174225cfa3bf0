// What each admin request gets: the gate (Host, cross-site), the routes and the operator check.

#include "telemetry/admin_gate.hpp"
#include "telemetry/admin_server_impl.hpp"
#include "telemetry/console_page.hpp"

namespace airlock::telemetry {

std::shared_ptr<event_hub::subscription> admin_server::impl::subscribe_events(const request& req) {
  const std::string_view target = req.target();
  if (req.method() != http::verb::get || target.substr(0, target.find('?')) != "/events")
    return nullptr;
  std::shared_lock lk(handlers_mu_);
  if (!handlers_enabled_.load() || handlers_.events == nullptr) return nullptr;
  return handlers_.events->subscribe();
}

namespace {

admin_request_view view_of(const request& req) {
  admin_request_view v;
  v.safe = req.method() == http::verb::get || req.method() == http::verb::head;
  v.path = req.target().substr(0, req.target().find('?'));
  v.host_count = req.count(http::field::host);
  v.http10 = req.version() < 11;
  auto field = [&req](auto name) -> std::optional<std::string_view> {
    if (auto it = req.find(name); it != req.end()) return it->value();
    return std::nullopt;
  };
  v.host = field(http::field::host);
  v.origin = field(http::field::origin);
  v.fetch_site = field("Sec-Fetch-Site");
  v.fetch_mode = field("Sec-Fetch-Mode");
  v.fetch_dest = field("Sec-Fetch-Dest");
  return v;
}

}  // namespace

std::optional<response> admin_server::impl::screen(const request& req, const tcp::endpoint& peer) {
  // A target that is not origin-form is someone using this port as a proxy: handle() answers
  // 404 whatever its Host.
  const std::string_view target = req.target();
  if (target.empty() || target.front() != '/' || req.method() == http::verb::connect)
    return std::nullopt;
  const admin_request_view v = view_of(req);
  http::status status = http::status::misdirected_request;
  std::optional<std::string> reason = misdirected(v, handlers_.host_names);
  if (!reason) {
    status = http::status::forbidden;
    reason = cross_site(v);
  } else if (!v.host || v.host_count > 1) {
    status = http::status::bad_request;  // RFC 9112 section 3.2
  }
  if (!reason) return std::nullopt;
  AIRLOCK_LOG(warn, "admin", std::string_view(req.method_string()), ' ', loggable(v.path), " from ",
              endpoint_string(peer), " refused: ", *reason);
  if (!v.safe && handlers_.refused) {
    admin_caller caller;
    caller.method = req.method_string();
    caller.path = v.path;
    caller.peer = peer;
    call_handler(req, [&] {
      handlers_.refused(caller, *reason);
      return response{};
    });
  }
  auto res = make_response(req, status, *reason + "\n");
  res.set("X-Content-Type-Options", "nosniff");  // the reason quotes the sender's Host or Origin
  return res;
}

std::optional<admin_actor> admin_server::impl::authorize(const request& req,
                                                         const tcp::endpoint& peer,
                                                         response& refusal) {
  admin_caller caller;
  caller.method = req.method_string();
  caller.path = req.target().substr(0, req.target().find('?'));
  if (auto a = req.find(http::field::authorization); a != req.end())
    caller.authorization = a->value();
  caller.peer = peer;
  std::string reason;
  std::optional<std::string> who;
  if (handlers_.authorize) {
    refusal = call_handler(req, [&] {
      who = handlers_.authorize(caller, reason);
      return response{};
    });
    if (refusal.result() != http::status::ok) return std::nullopt;
  } else {
    who = loopback_only(caller, reason);
  }
  if (who) return admin_actor{std::move(*who), endpoint_string(peer)};
  // The token is never logged: only that one was sent.
  AIRLOCK_LOG(warn, "admin", caller.method, ' ', caller.path, " from ", endpoint_string(peer),
              " refused (", caller.authorization.empty() ? "no" : "a", " credential): ", reason);
  refusal = make_response(req, http::status::unauthorized, reason + "\n");
  refusal.set(http::field::www_authenticate, "Bearer realm=\"airlock-admin\"");
  return std::nullopt;
}

response admin_server::impl::handle(const request& req, const tcp::endpoint& peer,
                                    const net::any_io_executor& strand,
                                    std::shared_ptr<later_answer>& later) {
  std::string_view target = req.target();
  // Only origin-form targets name admin resources. Absolute-form ("http://host/metrics"),
  // authority-form (CONNECT) and asterisk-form requests are someone using this port as a
  // proxy: there is nothing here for them (RFC 9112 section 3.2).
  if (target.empty() || target.front() != '/' || req.method() == http::verb::connect) {
    return make_response(req, http::status::not_found, "not found");
  }
  std::string_view path = target.substr(0, target.find('?'));
  bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  std::optional<admin_actor> actor;
  if (!get) {
    response refusal;
    actor = authorize(req, peer, refusal);
    if (!actor) return refusal;
  }

  auto not_configured = [&] {
    return make_response(req, http::status::not_implemented, "not configured");
  };
  auto method_not_allowed = [&](std::string_view allow) {
    auto res = make_response(req, http::status::method_not_allowed, "method not allowed");
    res.set(http::field::allow, allow);
    return res;
  };

  if (path == "/healthz") {
    if (!get) return method_not_allowed("GET, HEAD");
    // Liveness: answered by the event loop itself, so it fails when the loop is stuck.
    return make_response(req, http::status::ok, "ok");
  }
  if (path == "/readyz") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.ready) return not_configured();
    return call_handler(req, [&] {
      std::string why;
      if (handlers_.ready(why)) return make_response(req, http::status::ok, "ready");
      return make_response(req, http::status::service_unavailable,
                           why.empty() ? std::string("not ready") : "not ready: " + why);
    });
  }
  if (path == "/metrics") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.metrics_text) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.metrics_text(), metrics_content_type);
    });
  }
  if (path == "/policy") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.policy_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.policy_json(), "application/json");
    });
  }
  if (path == "/rules") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.rules_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.rules_json(), "application/json");
    });
  }
  if (path == "/reload") {
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.reload) return not_configured();
    return call_handler(req, [&] {
      std::string message;
      bool ok = handlers_.reload(*actor, message);
      // 422: the request was understood, the policy it asked to load was not acceptable.
      return make_response(req, ok ? http::status::ok : http::status::unprocessable_entity,
                           std::move(message));
    });
  }
  if (path == "/agents") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.agents_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.agents_json(), "application/json");
    });
  }
  if (path.starts_with("/agents/")) {
    // /agents/<name>/stop or /agents/<name>/resume; agent names never contain '/'.
    std::string_view rest = path.substr(8);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) {
      return make_response(req, http::status::not_found, "not found");
    }
    const std::string_view name = rest.substr(0, slash);
    const std::string_view action = rest.substr(slash + 1);
    if (action != "stop" && action != "resume") {
      return make_response(req, http::status::not_found, "not found");
    }
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.agent_control) return not_configured();
    return call_handler(req, [&] {
      std::string message;
      const int status = handlers_.agent_control(*actor, name, action == "stop", message);
      return make_response(req, static_cast<http::status>(status), std::move(message));
    });
  }
  if (path == "/console") {
    if (!get) return method_not_allowed("GET, HEAD");
    auto res = make_response(req, http::status::ok, std::string(console_html()),
                             "text/html; charset=utf-8");
    res.set("Content-Security-Policy", console_csp);
    res.set("X-Frame-Options", "DENY");  // older browsers without frame-ancestors
    res.set("X-Content-Type-Options", "nosniff");
    return res;
  }
  if (path == "/events") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (handlers_.events == nullptr) return not_configured();
    if (req.method() == http::verb::head)
      return make_response(req, http::status::ok, "", "text/event-stream; charset=utf-8");
    // GET comes here only when subscribe_events() found no room.
    return make_response(req, http::status::service_unavailable, "too many event subscribers\n");
  }
  if (path == "/approvals") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.approvals_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.approvals_json(), "application/json");
    });
  }
  if (path.starts_with("/approvals/")) {
    // /approvals/<id>/approve or /approvals/<id>/refuse
    std::string_view rest = path.substr(11);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0)
      return make_response(req, http::status::not_found, "not found");
    const std::string_view id = rest.substr(0, slash);
    const std::string_view action = rest.substr(slash + 1);
    if (action != "approve" && action != "refuse")
      return make_response(req, http::status::not_found, "not found");
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.approval_decide) return not_configured();
    return call_handler(req, [&] {
      auto pending = std::make_shared<later_answer>(strand);
      handlers_.approval_decide(
          *actor, id, action == "approve", req.body(), [pending](unsigned status, std::string m) {
            auto strand = pending->wake.get_executor();
            net::post(strand, [pending = std::move(pending), status, m = std::move(m)]() mutable {
              pending->result.emplace(status, std::move(m));
              pending->wake.cancel();
            });
          });
      later = std::move(pending);
      return make_response(req, http::status::accepted, "");  // replaced by the answer
    });
  }
  return make_response(req, http::status::not_found, "not found");
}

}  // namespace airlock::telemetry
