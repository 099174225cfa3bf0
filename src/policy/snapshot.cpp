#include "policy/snapshot.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "net/url_path.hpp"
#include "policy/binaries.hpp"
#include "policy/matcher.hpp"
#include "policy/ports.hpp"
#include "policy/token.hpp"

#include <algorithm>

namespace airlock::policy {
using core::iequals;
using core::trim_ows;
namespace {

bool host_matches(const compiled_rule::matcher& m, const net::normalized_host& host,
                  std::string_view& matched_by) noexcept {
  const std::string_view name = host.text;
  if (auto it = m.exact.find(name); it != m.exact.end()) {
    matched_by = *it;
    return true;
  }
  // Wildcards and regexes name DNS names only: an IP literal must be listed exactly, so that
  // a pattern written for names can never open a door to an address.
  if (host.is_ip()) return false;
  for (const auto& s : m.suffixes) {
    if (name.size() > s.dot_suffix.size() && name.ends_with(s.dot_suffix)) {
      matched_by = s.pattern;
      return true;
    }
  }
  for (const auto& re : m.host_regex) {
    if (re2::RE2::FullMatch(name, *re)) {
      matched_by = re->pattern();
      return true;
    }
  }
  return false;
}

// Client-supplied text goes into the detail (and from there into a header and the audit log)
// only when it is a short token.
bool is_short_token(std::string_view s) noexcept {
  if (s.empty() || s.size() > 32) return false;
  for (unsigned char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        std::string_view("!#$%&'*+-.^_`|~/").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string refusal_detail(const compiled_rule& rule, core::errc reason,
                           const request_target& target, bool dot_segments) {
  using core::errc;
  switch (reason) {
    case errc::port_denied:
      return core::str_cat("rule ", rule.name, ": port ", target.port, " not allowed (",
                           ports_text(rule.ports, 6), ")");
    case errc::scheme_denied:
      return target.effective_scheme() == model::scheme::https
                 ? core::str_cat("rule ", rule.name, " allows only plain http, not CONNECT")
                 : core::str_cat("rule ", rule.name,
                                 " allows only CONNECT (https), not plain http");
    case errc::needs_inspection:
      if (rule.inject.active || rule.redact.active)
        return core::str_cat("rule ", rule.name, " injects or redacts; set inspect: true");
      return core::str_cat("rule ", rule.name, " checks methods/paths; set inspect: true");
    case errc::upgrade_denied:
      if (is_short_token(target.upgrade))
        return core::str_cat("rule ", rule.name, ": upgrade to ", target.upgrade, " not allowed");
      return core::str_cat("rule ", rule.name, ": upgrade not allowed");
    case errc::protocol_denied:
      return core::str_cat("rule ", rule.name, ": protocol websocket not in its protocols");
    case errc::method_denied:
      if (is_short_token(target.method))
        return core::str_cat("rule ", rule.name, ": method ", target.method, " not allowed");
      return core::str_cat("rule ", rule.name, ": method not allowed");
    case errc::path_denied:
      // The path itself is not repeated: it may carry what the agent should not leak.
      if (dot_segments) return core::str_cat("rule ", rule.name, ": path has dot segments");
      return core::str_cat("rule ", rule.name, ": path not allowed");
    case errc::binary_denied:
      if (target.binary == nullptr)
        return core::str_cat("rule ", rule.name,
                             ": names programs (binaries), and this connection has none");
      return core::str_cat("rule ", rule.name, ": program ", quoted_program(*target.binary),
                           " is not in its binaries");
    default:
      return core::str_cat("rule ", rule.name, ": not allowed");
  }
}

}  // namespace

int refusal_rank(core::errc reason) noexcept {
  using core::errc;
  switch (reason) {
    case errc::binary_denied:
      return 7;
    case errc::path_denied:
      return 6;
    case errc::method_denied:
      return 5;
    case errc::upgrade_denied:
    case errc::protocol_denied:
      return 4;
    case errc::needs_inspection:
      return 3;
    case errc::scheme_denied:
      return 2;
    case errc::port_denied:
      return 1;
    default:
      return 0;
  }
}

rule_outcome evaluate_rule(const compiled_rule& rule, const request_target& target) noexcept {
  using core::errc;
  rule_outcome out;
  if (target.host == nullptr || !rule.match) return out;
  const auto& m = *rule.match;
  if (!host_matches(m, *target.host, out.host_matched_by)) return out;

  if (!contains_port(rule.ports, target.port)) {
    out.reason = errc::port_denied;
    return out;
  }
  if (!(target.effective_scheme() == model::scheme::https ? rule.allows_https : rule.allows_http)) {
    out.reason = errc::scheme_denied;
    return out;
  }
  if (target.is_connect) {
    // An opaque tunnel hides methods and paths; only an inspected rule can check them later,
    // on each inner request.
    out.reason = rule.checks_requests && !rule.inspect          ? errc::needs_inspection
                 : binaries_allow(rule.binaries, target.binary) ? errc::ok
                                                                : errc::binary_denied;
    return out;
  }
  // `protocols` without websocket: the upgrade is refused whatever `upgrades` says.
  if (target.upgrade == "websocket" && rule.source != nullptr &&
      (rule.source->protocols & model::protocol_websocket) == 0) {
    out.reason = errc::protocol_denied;
    return out;
  }
  if (!target.upgrade.empty() && std::find(rule.upgrades.begin(), rule.upgrades.end(),
                                           target.upgrade) == rule.upgrades.end()) {
    out.reason = errc::upgrade_denied;
    return out;
  }
  // RFC 9110 section 9.1: the method token is case-sensitive.
  if (!m.methods.empty() &&
      std::find(m.methods.begin(), m.methods.end(), target.method) == m.methods.end()) {
    out.reason = errc::method_denied;
    return out;
  }
  if (!m.paths.empty()) {
    // A server removes dot segments after our check (RFC 3986 section 5.2.4), so "^/repos/.*"
    // would let "/repos/../admin" through: a rule that checks paths refuses them.
    if (net::has_dot_segment(target.path)) {
      out.reason = errc::path_denied;
      out.dot_segments = true;
      return out;
    }
    const bool any = std::any_of(m.paths.begin(), m.paths.end(), [&](const auto& re) {
      return re2::RE2::FullMatch(target.path, *re);
    });
    if (!any) {
      out.reason = errc::path_denied;
      return out;
    }
  }
  // Last: "everything but the program" is the most specific refusal there is.
  out.reason = binaries_allow(rule.binaries, target.binary) ? errc::ok : errc::binary_denied;
  return out;
}

snapshot::snapshot(model::policy m) : model_(std::move(m)) {}
snapshot::~snapshot() = default;

bool snapshot::names_binary(std::string_view path) const noexcept {
  return std::any_of(rules_.begin(), rules_.end(),
                     [&](const compiled_rule& r) { return binaries_name(r.binaries, path); });
}

const compiled_agent* snapshot::find_agent(std::string_view name) const noexcept {
  for (const auto& a : agents_)
    if (a.name == name) return &a;
  return nullptr;
}

const compiled_secret* snapshot::find_secret(std::string_view name) const noexcept {
  for (const auto& s : secrets_)
    if (s.name == name) return &s;
  return nullptr;
}

const compiled_redactor* snapshot::find_redactor(std::string_view name) const noexcept {
  for (const auto& r : redactors_)
    if (r.name == name) return &r;
  return nullptr;
}

identity snapshot::identify(std::string_view relay_agent, std::string_view proxy_authorization,
                            const boost::asio::ip::address& client) const {
  if (relay_agent.empty()) return identify(proxy_authorization, client);
  identity id;
  id.agent = find_agent(relay_agent);
  if (!id.agent) {
    id.error = core::errc::auth_required;
    id.detail = core::str_cat("the relay's agent '", relay_agent, "' is not in the policy");
  }
  return id;
}

identity snapshot::identify(std::string_view proxy_authorization,
                            const boost::asio::ip::address& client) const {
  identity id;
  auto refuse = [&](std::string detail) {
    id.agent = nullptr;
    id.error = core::errc::auth_required;
    id.detail = std::move(detail);
    return id;
  };
  const std::string_view header = trim_ows(proxy_authorization);
  if (!header.empty()) {
    // RFC 9110 section 11.4: credentials = auth-scheme [ 1*SP ( token68 / #auth-param ) ];
    // the scheme is case-insensitive.
    const std::size_t sp = header.find_first_of(" \t");
    const std::string_view scheme = header.substr(0, sp);
    const std::string_view credentials =
        sp == std::string_view::npos ? std::string_view{} : trim_ows(header.substr(sp));
    if (credentials.empty()) return refuse("malformed Proxy-Authorization");
    if (iequals(scheme, "basic")) {
      // RFC 7617: base64(user-id ":" password); the user-id cannot contain ':'.
      const auto decoded = base64_decode(credentials);
      if (!decoded) return refuse("malformed Basic credentials");
      const std::size_t colon = decoded->find(':');
      if (colon == std::string::npos) return refuse("malformed Basic credentials");
      const std::string_view name = std::string_view(*decoded).substr(0, colon);
      const std::string_view token = std::string_view(*decoded).substr(colon + 1);
      const compiled_agent* agent = find_agent(name);
      // Hash even when the agent is unknown, so both failures take the same time.
      const std::string hash = sha256_hex(token);
      const bool good = agent != nullptr && !agent->token_sha256.empty() && !token.empty() &&
                        constant_time_equal(hash, agent->token_sha256);
      // The detail names neither the agent nor the token: a client that swapped the fields
      // would otherwise see its token echoed into logs.
      if (!good) return refuse("wrong agent name or token");
      id.agent = agent;
      return id;
    }
    if (iequals(scheme, "bearer")) {
      const std::string hash = sha256_hex(credentials);
      const compiled_agent* found = nullptr;
      for (const auto& a : agents_) {
        // No early exit: every configured hash is compared.
        if (!a.token_sha256.empty() && constant_time_equal(hash, a.token_sha256) && !found)
          found = &a;
      }
      if (found == nullptr) return refuse("no agent has this token");
      id.agent = found;
      return id;
    }
    return refuse("unsupported Proxy-Authorization scheme; use Basic or Bearer");
  }
  for (const auto& a : agents_) {
    for (const auto& c : a.sources) {
      if (c.contains(client)) {
        id.agent = &a;
        return id;
      }
    }
  }
  if (const auto* d = find_agent("default")) {
    id.agent = d;
    return id;
  }
  return refuse("no default agent; authenticate with Proxy-Authorization");
}

decision snapshot::decide(const compiled_agent& agent, const request_target& target) const {
  decision d;
  const compiled_rule* closest = nullptr;
  core::errc closest_reason = core::errc::host_denied;
  bool closest_dots = false;
  for (const compiled_rule* rule : agent.rules) {
    const rule_outcome o = evaluate_rule(*rule, target);
    if (o.reason == core::errc::ok) {
      d.reason = core::errc::ok;
      d.rule = rule;
      return d;
    }
    if (refusal_rank(o.reason) > refusal_rank(closest_reason)) {
      closest = rule;
      closest_reason = o.reason;
      closest_dots = o.dot_segments;
    }
  }
  d.reason = closest_reason;
  d.rule = closest;
  model::mode applies = model_.mode;
  if (closest != nullptr) {
    applies = closest->mode;
    d.detail = refusal_detail(*closest, closest_reason, target, closest_dots);
  } else if (target.host != nullptr) {
    d.detail = core::str_cat("no rule of agent ", agent.name, " allows host ", target.host->text);
  } else {
    d.detail = core::str_cat("no host to match for agent ", agent.name);
  }
  d.report_only = applies == model::mode::report;
  return d;
}

}  // namespace airlock::policy
