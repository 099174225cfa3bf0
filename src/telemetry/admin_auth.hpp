#pragma once
// Who is making a mutating request on the admin port. Every method but GET and HEAD (approve,
// refuse, stop, resume, reload) needs an operator: `Authorization: Bearer TOKEN` (RFC 6750
// section 2.1) whose SHA-256 the policy lists under `operators:` — checked by the handler
// the proxy installs (admin_handlers::authorize). Without that handler (no operator tokens
// configured), a mutation is accepted from a loopback peer only and recorded as "local":
// anyone who can reach a non-loopback admin port could otherwise act.
//
// Thread safety: pure functions.

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace airlock::telemetry {

// What the authorizer is told about a mutating request (the token only in `authorization`;
// it is never logged).
struct admin_caller {
  std::string_view method;
  std::string_view path;
  std::string_view authorization;  // the Authorization field's value; empty when absent
  boost::asio::ip::tcp::endpoint peer;
};

// Who acted, for the handlers and the audit trail.
struct admin_actor {
  std::string by;      // the operator's name, or "local"
  std::string client;  // the peer, "ip:port"
};

// The token of a Bearer credential (RFC 6750 section 2.1: the scheme is case-insensitive,
// RFC 9110 section 11.1; one space, then the token68), or nullopt for anything else.
std::optional<std::string_view> bearer_token(std::string_view authorization);

// The rule without operator tokens: a loopback peer (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104)
// is "local"; others are refused with `reason`.
std::optional<std::string> loopback_only(const admin_caller& caller, std::string& reason);

// "ip:port", IPv6 in brackets.
std::string endpoint_string(const boost::asio::ip::tcp::endpoint& ep);

}  // namespace airlock::telemetry
