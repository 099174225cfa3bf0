#pragma once
// The admin listener (default 127.0.0.1:9464): GET /metrics, /healthz, /readyz, /policy,
// /agents, /approvals, /rules, /events (server-sent events, admin_events.hpp) and POST /reload,
// /agents/<name>/stop, /agents/<name>/resume, /approvals/<id>/approve, /approvals/<id>/refuse. It
// is a separate listener from the proxy port, so nothing an agent sends through the proxy can reach
// it (the proxy refuses its own addresses as upstreams).
//
// Thread safety: runs on the io_context it is given (one strand per connection); the handlers
// are called from that context's threads, possibly concurrently when several threads run it.
// stop() and the destructor may be called from any thread, including from inside a handler;
// once either returns no handler is running (unless called from inside one) and none will be
// called again, so the objects the handlers refer to may be destroyed. Coroutines still pending
// keep the internal state alive until they finish or the io_context is destroyed; the
// io_context must outlive the admin_server.
//
// Every request first passes the gate (admin_gate.hpp): a Host that does not name this listener
// is 421 (DNS rebinding), a browser's request from another site or from a page element is 403
// (CSRF, /events slots taken by <img>); a refused mutating request is audited (`refused`).
// Then a request other than GET or HEAD needs an operator (admin_auth.hpp, `authorize`):
// without one it is refused with 401 and a `WWW-Authenticate: Bearer` field (RFC 6750 section
// 3), and logged without the token.
//
// Limits: 64 concurrent connections (more are answered 503 and closed), 8 KiB request head,
// 8 KiB body, 10 s per read or write (keep-alive idle included).

#include "telemetry/admin_auth.hpp"
#include "telemetry/event_hub.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::telemetry {

struct admin_handlers {
  std::function<std::string()> metrics_text;  // GET /metrics
  // GET /readyz: 200 when true, else 503 "not ready", followed by ": " and `why` when set.
  std::function<bool(std::string& why)> ready;
  std::function<std::string()> policy_json;  // GET /policy (JSON object)
  std::function<std::string()> rules_json;   // GET /rules: hits per rule (JSON object)
  // POST /reload: returns true and a message when the new policy was loaded, false and the
  // load errors otherwise (answered as 200 / 422 with the message as body).
  std::function<bool(const admin_actor& by, std::string& message)> reload;
  // GET /agents: each agent's controls (stopped, suspended, in flight) as a JSON object.
  std::function<std::string()> agents_json;
  // POST /agents/<name>/stop and /agents/<name>/resume: the kill switch. Returns the answer's
  // status: 200 done; 202 (RFC 9110, 15.3.3: accepted, not completed) applied on this replica
  // while the shared store is unavailable, the fleet's part pending; 404 when the policy has no
  // such agent. The message is the answer's body.
  std::function<int(const admin_actor& by, std::string_view agent, bool stop, std::string& message)>
      agent_control;
  // GET /approvals: the requests held for a decision, the access requests and the grants (JSON).
  std::function<std::string()> approvals_json;
  // POST /approvals/<id>/approve or /approvals/<id>/refuse, with an optional JSON body
  // ({"scope": "once" | "agent_host" | "permanent", "duration": "1h", "method": true,
  // "path_prefix": "/v1/"}). `done` gets the answer's status and body exactly once, from any
  // thread, at once or later: a request held on another replica answers over the shared store,
  // and meanwhile the listener serves its other connections (probes, scrapes).
  using decision_done = std::function<void(unsigned status, std::string message)>;
  std::function<void(const admin_actor& by, std::string_view id, bool approve,
                     std::string_view body, decision_done done)>
      approval_decide;
  // Who makes a mutating request (every method but GET and HEAD): the operator's name, or
  // nullopt with `reason` (401). Unset: loopback_only (admin_auth.hpp).
  std::function<std::optional<std::string>(const admin_caller& caller, std::string& reason)>
      authorize;
  // A mutating request refused before an operator was asked (its Host does not name this
  // listener, or a browser sent it from another site: admin_gate.hpp), with the reason: the
  // audit record of the attempt. Unset: nothing recorded.
  std::function<void(const admin_caller& caller, std::string_view reason)> refused;
  // GET /events: the live event stream (server-sent events) of this hub; null: 501.
  event_hub* events = nullptr;
  // Host names, besides IP literals and localhost, that requests may give for this listener
  // (`listen.admin_hosts`, lowercase; admin_gate.hpp).
  std::vector<std::string> host_names;
};

class admin_server {
 public:
  // Binds immediately; throws boost::system::system_error when the endpoint cannot be bound
  // (startup only, not the data path).
  admin_server(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint,
               admin_handlers handlers);
  ~admin_server();
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();  // begin accepting (no-op after stop())
  void stop();   // stop accepting and close open admin connections; idempotent

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace airlock::telemetry
