#pragma once
// Which requests the admin port serves at all, before any route or operator is looked at: the
// defences against a web page the operator's browser has open.
//
// - DNS rebinding: a page at http://evil.example:9464/ whose name is re-pointed at 127.0.0.1 is
//   same-origin with the admin port in the browser's eyes; only its `Host` field tells (RFC 9110
//   section 7.2). A request is served only when its Host names this listener: an IP literal
//   (the browser connected to exactly that address, so no name was resolved: rebinding needs a
//   name), `localhost`, or a name the policy lists (`listen.admin_hosts`). The port is not
//   compared: a port forward (`kubectl port-forward`, `docker -p 19464:9464`) changes it, and
//   the address (or localhost) alone already says no attacker's name was used. Anything else is
//   421 Misdirected Request (RFC 9110 section 15.5.20).
// - Cross-site requests (CSRF, and page elements that hold /events slots): browsers say where
//   a request comes from (W3C Fetch Metadata: Sec-Fetch-Site, Sec-Fetch-Dest; RFC 6454 Origin).
//   Refused (403): Sec-Fetch-Site other than same-origin or none; Sec-Fetch-Dest other than
//   empty (fetch, EventSource) or document (a typed URL, a bookmark; GET and HEAD only); an
//   Origin other than http:// and this request's own Host. One exception: a top-level
//   navigation to GET /console from another site (a link in a runbook or a dashboard), whose
//   page acts only on the operator's clicks and cannot be framed (its CSP).
// curl, Prometheus and probes send no Fetch Metadata and no Origin; they need a Host that
// names the listener (every HTTP/1.1 client sends the address or name it connected to).
//
// Thread safety: pure functions.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::telemetry {

// What the gate reads of a request; absent fields are nullopt.
struct admin_request_view {
  bool safe = true;  // GET or HEAD: reads only
  std::string_view path;
  std::optional<std::string_view> host;
  std::size_t host_count = 0;  // Host fields sent (RFC 9112 section 3.2: exactly one)
  bool http10 = false;         // HTTP/1.0 may omit Host
  std::optional<std::string_view> origin;
  std::optional<std::string_view> fetch_site;
  std::optional<std::string_view> fetch_mode;
  std::optional<std::string_view> fetch_dest;
};

// True when `host` (a Host field's value, "host[:port]") names this admin listener: an IPv4
// or bracketed IPv6 literal, `localhost`, or one of `names` (lowercase; compared without case).
bool admin_host_allowed(std::string_view host, const std::vector<std::string>& names);

// Why the request is misdirected (421), or nullopt when its Host names the listener.
std::optional<std::string> misdirected(const admin_request_view& req,
                                       const std::vector<std::string>& names);

// Why a browser's request is refused as coming from another site or a page element (403), or
// nullopt. Call after misdirected(): the Origin is compared with the (allowed) Host.
std::optional<std::string> cross_site(const admin_request_view& req);

// `value` for a log line or an audit detail: at most 100 bytes, anything outside printable
// ASCII as '?'. A Host or Origin is the sender's text.
std::string loggable(std::string_view value);

}  // namespace airlock::telemetry
