#pragma once
// The one table of reasons Airlock refuses or fails a request. Each value maps to an HTTP
// status, an RFC 9209 Proxy-Status error token, and a stable snake_case name that is used as
// the metric label and the audit record's `reason`. Registered as a boost::system category so
// the data path can carry it in an error_code without exceptions.

#include <boost/system/error_code.hpp>

#include <string_view>

namespace airlock::core {

enum class errc {
  ok = 0,
  // policy decisions (403)
  host_denied,                // no rule of the agent names this host
  port_denied,                // a rule names the host but not this port
  scheme_denied,              // host and port match, not this way in (plain http vs CONNECT)
  method_denied,              // host and port match, the method does not
  path_denied,                // host, port and method match, the path does not
  upgrade_denied,             // protocol upgrade (WebSocket, h2c) the rule does not allow
  protocol_denied,            // the rule's `protocols` do not list this one (h2, http/1.1, ...)
  needs_inspection,           // rule checks paths/methods but the CONNECT tunnel is opaque
  sni_mismatch,               // TLS ClientHello SNI differs from the CONNECT host (or is missing)
  not_tls,                    // a tunnel to a name-based rule carried something other than TLS
  binary_denied,              // the rule names programs (`binaries`); this one is not among them
  destination_ip_prohibited,  // address guard: loopback, private, metadata, ...
  auth_required,              // 407: credentials missing or wrong
  // request controls
  query_denied,         // 403: a query parameter is missing, unknown or breaks its pattern
  header_denied,        // 403: a header is missing, forbidden or breaks its pattern
  body_denied,          // 403: a JSON body field breaks its constraint (or the body is not JSON)
  rate_limited,         // 429: a request-rate token bucket is empty
  quota_exceeded,       // 429: an hourly request or byte quota is used up
  concurrency_limited,  // 429: the agent (or agent and rule) has too many requests in flight
  agent_suspended,      // 429: the circuit breaker stopped the agent for a cool-down
  agent_stopped,        // 403: an operator stopped the agent (kill switch)
  // credentials
  placeholder_refused,    // 403: a secret's placeholder sent to a host the secret is not bound to
  placeholder_misplaced,  // 403: a placeholder on a bound host where its swap_in does not swap it
  placeholder_required,   // 403: the rule requires a placeholder the request does not carry
  secret_not_bound,       // 403: the rule would inject a secret on a host it is not bound to
  // content inspection (issue 16)
  dlp_blocked,            // 403: the request carries a secret or sensitive data (DLP finding)
  hostname_exfiltration,  // 403: a host name with data-like labels (encoded, high-entropy)
  host_blocklisted,       // 403: the host is on the policy's blocklist
  injection_blocked,      // 403: the answer carries a prompt injection (DLP `responses: block`)
  // MCP / JSON-RPC tool calls (issue 22; answered as JSON-RPC errors where the call has an id)
  mcp_method_denied,  // 403: a JSON-RPC method the rule's `mcp.methods` does not list
  mcp_tool_denied,    // 403: a tools/call of a tool the rule's `mcp.tools` does not list
  mcp_params_denied,  // 403: a tool's arguments break their constraints
  mcp_invalid,        // 400: the body is not JSON-RPC 2.0 (or too many messages in a batch)
  // held requests (issue 20: filters/approval)
  approval_refused,    // 403: an operator refused the held request
  approval_timeout,    // 403: no operator decided within the hold's timeout
  approval_limit,      // 429: too many requests of the agent (or of the proxy) held already
  approval_abandoned,  // 403: the client closed its connection while its request was held
  proxy_endpoint,      // the proxy's own endpoint (airlock.internal) answered: never forwarded
  // malformed or oversized input
  bad_request,           // 400: unparsable request, smuggling attempt, bad target
  unsupported_scheme,    // 400: not http:// and not CONNECT
  origin_form,           // 400: origin-form request sent to the proxy port
  bad_port,              // 400: port missing, zero or out of range
  header_too_large,      // 431
  body_too_large,        // 413
  head_timeout,          // 408: full head not received in time
  too_many_connections,  // 503: global or per-client cap
  // upstream failures
  dns_error,              // 502
  dns_timeout,            // 504
  connect_refused,        // 502
  connect_timeout,        // 504
  upstream_error,         // 502: reset, malformed response, ...
  upstream_timeout,       // 504: no response in time
  upstream_tls_failed,    // 502: certificate verification or handshake failure
  response_too_large,     // 502: response cut off
  unredactable_response,  // 502: a redacting rule got a body in a coding it cannot decode
  // everything else: fail closed
  decision_timeout,   // 503: a filter waited (a shared limit, an approval) and no answer came
  store_unavailable,  // 503: the shared state store is down and `state.on_unavailable: deny`
  audit_unavailable,  // 503: the audit log cannot be written and `audit.on_failure: deny`
  internal_error,     // 500
  shutting_down,      // 503
  count_
};

struct errc_info {
  unsigned http_status;
  std::string_view proxy_status_token;  // RFC 9209 section 2.3
  std::string_view name;                // metric label and audit `reason`
  std::string_view message;             // one human sentence for the body and logs
};

// Total for every value; an out-of-range value yields the internal_error entry.
const errc_info& info(errc e) noexcept;
inline std::string_view name(errc e) noexcept {
  return info(e).name;
}

const boost::system::error_category& airlock_category() noexcept;
boost::system::error_code make_error_code(errc e) noexcept;

}  // namespace airlock::core

template <>
struct boost::system::is_error_code_enum<airlock::core::errc> : std::true_type {};
