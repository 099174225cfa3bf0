// `airlock proxy`'s admin handlers (proxy_admin.hpp): the policy's operators decide who may
// act, and each action is one audit record (telemetry/audit_event.hpp).

#include "app/proxy_admin.hpp"

#include "core/log.hpp"
#include "filters/approval/admin_api.hpp"
#include "filters/approval/fleet.hpp"
#include "filters/rate_limit/shared_store.hpp"
#include "policy/operators.hpp"
#include "policy/snapshot.hpp"
#include "proxy/server.hpp"
#include "telemetry/audit_event.hpp"
#include "telemetry/audit_log.hpp"
#include "telemetry/metrics.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <ctime>
#include <map>

namespace airlock::app {
namespace {

std::string rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string policy_json(proxy::server* server) {
  boost::json::object o;
  if (server) {
    auto st = server->status();
    o["version"] = st.version;
    o["source"] = st.source;
    o["loaded_at"] = rfc3339(st.loaded_at);
    o["last_attempt"] = rfc3339(st.last_attempt);
    o["last_error"] =
        st.last_error.empty() ? boost::json::value(nullptr) : boost::json::value(st.last_error);
    o["restart_needed"] = st.restart_needed.empty() ? boost::json::value(nullptr)
                                                    : boost::json::value(st.restart_needed);
    o["last_changes"] = st.last_changes;
    o["ca_fingerprint"] = st.ca_fingerprint.empty() ? boost::json::value(nullptr)
                                                    : boost::json::value(st.ca_fingerprint);
  }
  return boost::json::serialize(o);
}

// The answer's first line, without its newline: a short reason for the audit record.
std::string_view first_line(std::string_view message) {
  return message.substr(0, std::min<std::size_t>(message.find('\n'), 200));
}

telemetry::audit_event operator_event(const telemetry::admin_actor& by, std::string_view action,
                                      std::string_view outcome, std::string_view detail) {
  telemetry::audit_event e;
  e.time = std::chrono::system_clock::now();
  e.type = "operator";
  e.action = action;
  e.by = by.by;
  e.client = by.client;
  e.outcome = outcome;
  e.detail = first_line(detail);
  return e;
}

// GET /rules: each rule of the policy in force with its hits, by decision, since the proxy
// started: the sums over airlock_requests_total{rule,decision} (the counter the metrics already
// keep per rule; "none" is the requests no rule matched).
std::string rules_json(proxy::server* server, telemetry::metrics& m) {
  std::map<std::string, std::map<std::string, double>> hits;
  for (const auto& family : m.registry().Collect()) {
    if (family.name != "airlock_requests_total") continue;
    for (const auto& metric : family.metric) {
      std::string rule, decision;
      for (const auto& label : metric.label) {
        if (label.name == "rule") rule = label.value;
        if (label.name == "decision") decision = label.value;
      }
      hits[rule][decision] += metric.counter.value;
    }
  }
  boost::json::array rules;
  auto entry = [&](const std::string& name, bool in_policy) {
    boost::json::object o;
    o["name"] = name;
    o["in_policy"] = in_policy;
    boost::json::object by_decision;
    std::uint64_t total = 0;
    if (auto it = hits.find(name); it != hits.end()) {
      for (const auto& [decision, n] : it->second) {
        by_decision[decision] = static_cast<std::uint64_t>(n);
        total += static_cast<std::uint64_t>(n);
      }
      hits.erase(it);
    }
    o["hits"] = total;
    o["by_decision"] = std::move(by_decision);
    rules.push_back(std::move(o));
  };
  if (const auto snap = server ? server->current_policy() : nullptr) {
    for (const auto& r : snap->model().rules)
      if (!r.name.empty()) entry(r.name, true);
  }
  // Rules a reload removed, "none" and "_overflow": counted, no longer (or never) in the policy.
  while (!hits.empty())
    entry(hits.begin()->first, false);
  boost::json::object root;
  root["rules"] = std::move(rules);
  return boost::json::serialize(root);
}

// GET /agents: the server's live state of each agent (stopped, suspended, in flight), with the
// limits the policy in force gives it (`limits`: its rate and quotas, 0 = none; `breaker`).
std::string agents_json(proxy::server* server) {
  if (!server) return "{\"agents\":[]}";
  auto root = boost::json::parse(server->agents_json());
  const auto snap = server->current_policy();
  if (!snap || !root.is_object()) return boost::json::serialize(root);
  auto* agents = root.as_object().if_contains("agents");
  if (agents == nullptr || !agents->is_array()) return boost::json::serialize(root);
  for (auto& entry : agents->as_array()) {
    auto* o = entry.if_object();
    const auto* name = o ? o->if_contains("name") : nullptr;
    if (name == nullptr || !name->is_string()) continue;
    const auto& list = snap->model().agents;
    const auto a = std::find_if(list.begin(), list.end(),
                                [&](const auto& x) { return x.name == name->as_string(); });
    if (a == list.end()) continue;
    const auto& r = a->rate;
    (*o)["limits"] = {
        {"requests", r.requests},
        {"per_seconds", std::chrono::duration_cast<std::chrono::seconds>(r.per).count()},
        {"burst", r.burst},
        {"concurrent", r.concurrent},
        {"requests_per_hour", r.requests_per_hour},
        {"bytes_per_hour", r.bytes_per_hour},
        {"upload_bytes_per_second", r.upload_bytes_per_second},
        {"download_bytes_per_second", r.download_bytes_per_second}};
    const auto& b = a->breaker;
    (*o)["breaker"] = {
        {"max_failures", b.max_failures},
        {"window_seconds", std::chrono::duration_cast<std::chrono::seconds>(b.window).count()},
        {"cooldown_seconds", std::chrono::duration_cast<std::chrono::seconds>(b.cooldown).count()}};
  }
  return boost::json::serialize(root);
}

std::string_view decide_outcome(unsigned status) {
  switch (status) {
    case 200:
      return "ok";
    case 400:
      return "invalid";
    case 404:
      return "not_found";
    default:
      return "failed";
  }
}

// The operator behind a mutating request: the policy's operators' tokens, or without any, a
// loopback peer ("local"). A refusal is audited (never with the credential).
std::optional<std::string> authorize(proxy::server* server, telemetry::audit_log& audit,
                                     const telemetry::admin_caller& caller, std::string& reason) {
  const auto snap = server ? server->current_policy() : nullptr;
  std::optional<std::string> who;
  if (!snap || snap->model().operators.empty()) {
    who = telemetry::loopback_only(caller, reason);
  } else if (auto token = telemetry::bearer_token(caller.authorization); !token) {
    reason = caller.authorization.empty() ? "operator token required (Authorization: Bearer)"
                                          : "not a Bearer credential";
  } else if (const auto* op = policy::find_operator(snap->model(), *token)) {
    who = op->name;
  } else {
    reason = "unknown operator token";
  }
  if (!who) {
    const telemetry::admin_actor nobody{"", telemetry::endpoint_string(caller.peer)};
    // The action is the path's last segment: reload, stop, resume, approve, refuse.
    const auto action = caller.path.substr(caller.path.rfind('/') + 1);
    auto e = operator_event(nobody, action, "unauthorized", reason);
    e.path = caller.path;
    audit.write(e);
  }
  return who;
}

// A mutating request the admin gate refused (a Host that does not name the listener, a
// browser's cross-site request): the attempt's one record, `by` empty like an unauthorized one.
void write_refused_record(telemetry::audit_log& audit, const telemetry::admin_caller& caller,
                          std::string_view reason) {
  const telemetry::admin_actor nobody{"", telemetry::endpoint_string(caller.peer)};
  auto e =
      operator_event(nobody, caller.path.substr(caller.path.rfind('/') + 1), "refused", reason);
  e.path = caller.path;
  audit.write(e);
}

// The one audit record of POST /approvals/ID/approve|refuse: the target, scope, duration.
void write_decision_record(telemetry::audit_log& audit, const telemetry::admin_actor& by,
                           bool approve, unsigned status, const std::string& message,
                           const filters::approval::admin_decision& decided) {
  auto e = operator_event(by, approve ? "approve" : "refuse", decide_outcome(status), message);
  const auto& t = decided.target;
  e.agent = t.agent;
  e.method = t.method;
  e.host = t.host;
  e.port = t.port;
  e.path = t.path;
  e.approval_id = decided.id;
  if (approve) {
    const auto scope = filters::approval::effective_scope(t, decided.d.scope);
    e.scope = filters::approval::scope_name(scope);
    if (scope == filters::approval::scope::agent_host)
      e.duration = std::chrono::duration_cast<std::chrono::seconds>(decided.d.duration);
  }
  audit.write(e);
}

// A decision for a request held on another replica (fleet.hpp): sent there, answered by it.
// The answer (and the record) come on the fleet's or the store's thread, or at once.
void decide_remote(filters::approval::fleet& fleet,
                   const filters::approval::fleet_msg::qualified_id& q, bool approve,
                   std::string_view body, const telemetry::admin_actor& by,
                   telemetry::audit_log& audit, telemetry::admin_handlers::decision_done done) {
  filters::approval::admin_decision out;
  out.d.approve = approve;
  out.d.by = by.by;
  out.id = q.id;
  std::string message;
  if (!filters::approval::read_decision(body, out.d, message)) {
    message += "\n";
    write_decision_record(audit, by, approve, 400, message, out);
    return done(400, std::move(message));
  }
  const auto decision = out.d;
  fleet.decide_remote(q, decision,
                      [&audit, by, approve, q, out = std::move(out),
                       done = std::move(done)](filters::approval::fleet_msg::ack a) mutable {
                        out.target = std::move(a.target);
                        auto text = core::str_cat("replica ", q.replica, ": ", a.message, "\n");
                        write_decision_record(audit, by, approve, a.status, text, out);
                        done(a.status, std::move(text));
                      });
}

// POST /approvals/ID/approve|refuse. ID is this replica's number, or <replica>:<number> (GET
// /approvals lists other replicas' holds so): this replica's own name works too. The record is
// written here, where it was decided; the holder writes the rest of the hold's life.
void decide(proxy::server& server, filters::approval::fleet* fleet, telemetry::audit_log& audit,
            const telemetry::admin_actor& by, std::string_view id, bool approve,
            std::string_view body, telemetry::admin_handlers::decision_done done) {
  const auto q = filters::approval::fleet_msg::parse_qualified(id);
  if (q && fleet != nullptr && q->replica != fleet->replica())
    return decide_remote(*fleet, *q, approve, body, by, audit, std::move(done));
  filters::approval::admin_decision decided;
  std::string message;
  unsigned status = 0;
  const std::string local = q ? std::to_string(q->id) : std::string(id);
  if (q && (fleet == nullptr || q->replica != fleet->replica())) {
    message = "not found\n";  // another replica's id, and no shared store to reach it
    status = 404;
  } else {
    status = filters::approval::decide_from_admin(server.approvals(), local, approve, body, by.by,
                                                  message, &decided);
  }
  write_decision_record(audit, by, approve, status, message, decided);
  done(status, std::move(message));
}

}  // namespace

telemetry::admin_handlers make_admin_handlers(const admin_context& ctx) {
  telemetry::admin_handlers h;
  auto& server = ctx.server;
  auto& audit = ctx.audit;
  h.metrics_text = [&m = ctx.metrics, &audit] {
    m.audit_log_state(audit.writable(), audit.dropped_records(), audit.write_errors());
    return m.serialize();
  };
  // Not ready while the shared store is down and on_unavailable is deny: this replica would
  // refuse every limited request. Nor while the audit log cannot be written and
  // audit.on_failure is deny: it refuses every request.
  h.ready = [&ready = ctx.ready, &store = ctx.store, &server, &audit](std::string& why) {
    if (!ready.load()) return false;
    if (store && !store->available() && store->settings().deny_when_unavailable) {
      why = "the shared state store is unavailable (state.on_unavailable: deny)";
      return false;
    }
    if (server && !audit.writable() && server->current_policy()->model().audit.deny_on_failure) {
      why = "the audit log cannot be written (audit.on_failure: deny)";
      return false;
    }
    return true;
  };
  h.policy_json = [&server] { return policy_json(server); };
  h.rules_json = [&server, &m = ctx.metrics] { return rules_json(server, m); };
  h.authorize = [&server, &audit](const telemetry::admin_caller& caller, std::string& reason) {
    return authorize(server, audit, caller, reason);
  };
  h.refused = [&audit](const telemetry::admin_caller& caller, std::string_view reason) {
    write_refused_record(audit, caller, reason);
  };
  h.reload = [&server, &after_reload = ctx.after_reload, &audit](const telemetry::admin_actor& by,
                                                                 std::string& message) {
    if (!server) {
      message = "not started";
      return false;
    }
    const bool ok = server->reload("api", message);
    if (after_reload) after_reload();
    audit.write(operator_event(by, "reload", ok ? "ok" : "failed", message));
    return ok;
  };
  h.agents_json = [&server] { return agents_json(server); };
  h.agent_control = [&server, &audit](const telemetry::admin_actor& by, std::string_view agent,
                                      bool stop, std::string& message) {
    if (!server) {
      message = "not started";
      return 404;
    }
    using outcome = proxy::server::control_outcome;
    const outcome o = server->agent_control(agent, stop, message);
    // "pending": applied here, the fleet's part waits for the shared store.
    auto e = operator_event(by, stop ? "stop" : "resume",
                            o == outcome::done            ? "ok"
                            : o == outcome::fleet_pending ? "pending"
                                                          : "not_found",
                            message);
    e.agent = agent;
    audit.write(e);
    return o == outcome::done ? 200 : o == outcome::fleet_pending ? 202 : 404;
  };
  h.approvals_json = [&server, &fleet = ctx.approvals_fleet] {
    if (!server) return std::string("{\"pending\":[]}");
    return fleet != nullptr ? fleet->json() : server->approvals().json();
  };
  h.approval_decide = [&server, &after_reload = ctx.after_reload, &audit,
                       &fleet = ctx.approvals_fleet](
                          const telemetry::admin_actor& by, std::string_view id, bool approve,
                          std::string_view body, telemetry::admin_handlers::decision_done done) {
    if (!server) return done(503, "not started");
    decide(*server, fleet, audit, by, id, approve, body, std::move(done));
    if (after_reload) after_reload();  // a permanent approval reloaded the policy
  };
  return h;
}

void warn_if_admin_exposed(const boost::asio::ip::tcp::endpoint& admin, bool operators) {
  auto a = admin.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  if (operators || a.is_loopback()) return;
  AIRLOCK_LOG(warn, "admin", "the admin port ", telemetry::endpoint_string(admin),
              " is not on loopback and the policy names no operators: only loopback peers may "
              "act (approve, stop, reload), but anyone who reaches it can read agents, approvals "
              "and metrics; configure operators: with token_sha256");
}

}  // namespace airlock::app
