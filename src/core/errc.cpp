#include "core/errc.hpp"

#include <array>
#include <string>

namespace airlock::core {
namespace {

// Indexed by errc. Tokens are from the RFC 9209 registry; "http_request_denied" is the token
// RFC 9209 gives for a request the proxy refuses by policy.
constexpr std::array<errc_info, static_cast<std::size_t>(errc::count_)> table{{
    {200, "", "ok", "allowed"},
    {403, "http_request_denied", "host_denied", "no rule allows this host"},
    {403, "http_request_denied", "port_denied", "no rule allows this port for the host"},
    {403, "http_request_denied", "scheme_denied",
     "the rule allows this host and port only through CONNECT, or only as plain http"},
    {403, "http_request_denied", "method_denied", "the method is not allowed"},
    {403, "http_request_denied", "path_denied", "the path is not allowed"},
    {403, "http_request_denied", "upgrade_denied", "protocol upgrade not allowed"},
    {403, "http_request_denied", "protocol_denied", "the rule does not allow this protocol"},
    {403, "http_request_denied", "needs_inspection",
     "the rule checks requests but the tunnel is not inspected"},
    {403, "http_request_denied", "sni_mismatch", "TLS server name does not match CONNECT host"},
    {403, "http_request_denied", "not_tls", "tunnel did not start with a TLS ClientHello"},
    {403, "http_request_denied", "binary_denied",
     "the rule allows other programs, or the program is unknown"},
    {403, "destination_ip_prohibited", "destination_ip_prohibited",
     "destination address is prohibited"},
    {407, "http_request_denied", "auth_required", "proxy authentication required"},
    {403, "http_request_denied", "query_denied", "a query parameter is not allowed"},
    {403, "http_request_denied", "header_denied", "a request header is not allowed"},
    {403, "http_request_denied", "body_denied", "the request body is not allowed"},
    {429, "http_request_denied", "rate_limited", "request rate limit exceeded"},
    {429, "http_request_denied", "quota_exceeded", "request quota used up"},
    {429, "connection_limit_reached", "concurrency_limited", "too many requests in flight"},
    {429, "http_request_denied", "agent_suspended",
     "agent suspended by the circuit breaker; retry later"},
    {403, "http_request_denied", "agent_stopped", "agent stopped by an operator"},
    {403, "http_request_denied", "placeholder_refused",
     "a secret's placeholder was sent to a host the secret is not bound to"},
    {403, "http_request_denied", "placeholder_misplaced",
     "a secret's placeholder was sent where the secret's swap_in does not swap it"},
    {403, "http_request_denied", "placeholder_required",
     "the request does not carry the placeholder the rule requires"},
    {403, "http_request_denied", "secret_not_bound",
     "the rule's secret may not be sent to this host"},
    {403, "http_request_denied", "dlp_blocked", "the request carries a secret or sensitive data"},
    {403, "http_request_denied", "hostname_exfiltration", "the host name carries data-like labels"},
    {403, "http_request_denied", "host_blocklisted", "the host is on the blocklist"},
    {403, "http_request_denied", "injection_blocked",
     "the answer carries a prompt injection, or cannot be read for one"},
    {403, "http_request_denied", "mcp_method_denied", "the JSON-RPC method is not allowed"},
    {403, "http_request_denied", "mcp_tool_denied", "the MCP tool is not allowed"},
    {403, "http_request_denied", "mcp_params_denied", "the MCP tool's arguments are not allowed"},
    {400, "http_request_error", "mcp_invalid", "the body is not a JSON-RPC 2.0 message"},
    {403, "http_request_denied", "approval_refused", "an operator refused the request"},
    {403, "http_request_denied", "approval_timeout", "no operator approved the request in time"},
    {429, "http_request_denied", "approval_limit", "too many requests awaiting approval"},
    {403, "http_request_denied", "approval_abandoned",
     "the client closed its connection while the request was held"},
    {400, "http_request_error", "proxy_endpoint",
     "answered by the proxy itself (airlock.internal), never forwarded"},
    {400, "http_request_error", "bad_request", "malformed request"},
    {400, "http_request_error", "unsupported_scheme", "only http:// and CONNECT are supported"},
    {400, "http_request_error", "origin_form",
     "origin-form request at the proxy port; use an absolute URL"},
    {400, "http_request_error", "bad_port", "invalid port"},
    {431, "http_request_error", "header_too_large", "request head too large"},
    {413, "http_request_error", "body_too_large", "request body too large"},
    {408, "http_request_error", "head_timeout", "request head not received in time"},
    {503, "connection_limit_reached", "too_many_connections", "too many connections"},
    {502, "dns_error", "dns_error", "name could not be resolved"},
    {504, "dns_timeout", "dns_timeout", "name resolution timed out"},
    {502, "connection_refused", "connect_refused", "upstream refused the connection"},
    {504, "connection_timeout", "connect_timeout", "upstream connection timed out"},
    {502, "http_response_incomplete", "upstream_error", "upstream failed"},
    {504, "http_response_timeout", "upstream_timeout", "upstream did not answer in time"},
    {502, "tls_certificate_error", "upstream_tls_failed", "upstream TLS failed"},
    {502, "http_response_body_size", "response_too_large", "response too large"},
    {502, "proxy_internal_response", "unredactable_response",
     "the response cannot be redacted (its coding or charset), or carries a secret"},
    {503, "proxy_internal_response", "decision_timeout",
     "no decision came in time (a shared limit or an approval); retry later"},
    {503, "proxy_internal_response", "store_unavailable",
     "the store of the shared limits is unavailable; retry later"},
    {503, "proxy_internal_response", "audit_unavailable",
     "the audit log cannot be written; retry later"},
    {500, "proxy_internal_error", "internal_error", "internal error"},
    {503, "proxy_internal_response", "shutting_down", "proxy is shutting down"},
}};

class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "airlock"; }
  std::string message(int ev) const override {
    return std::string(info(static_cast<errc>(ev)).message);
  }
};

}  // namespace

const errc_info& info(errc e) noexcept {
  auto i = static_cast<std::size_t>(e);
  if (i >= table.size()) i = static_cast<std::size_t>(errc::internal_error);
  return table[i];
}

const boost::system::error_category& airlock_category() noexcept {
  static const category instance;
  return instance;
}

boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), airlock_category()};
}

}  // namespace airlock::core
