#include "policy/explain.hpp"

#include "core/str_cat.hpp"
#include "policy/binaries.hpp"
#include "policy/matcher.hpp"
#include "policy/ports.hpp"

#include <algorithm>
#include <optional>

namespace airlock::policy {
namespace {

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i)
    out += core::str_cat(i ? ", " : "", items[i]);
  return out + "]";
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

// The path without the query.
std::string_view path_only(std::string_view path_and_query) {
  return path_and_query.substr(0, path_and_query.find('?'));
}

std::string host_text(const net::authority& a) {
  return a.host.kind == net::host_kind::ipv6 ? core::str_cat("[", a.host.text, "]:", a.port)
                                             : core::str_cat(a.host.text, ":", a.port);
}

// The end of a line for a rule that allows all but, maybe, the program.
std::string with_binaries(const compiled_rule& rule, const rule_outcome& o, const request_target& t,
                          std::string& out) {
  if (rule.binaries.empty()) return core::str_cat(out, "; allows");
  if (o.reason != core::errc::binary_denied)
    return core::str_cat(out, ", program ", t.binary->path, " ok; allows");
  if (t.binary == nullptr)
    return core::str_cat(out, "; only programs ", binaries_text(rule.binaries),
                         ", and the request has none (give --binary PATH)");
  if (binaries_name(rule.binaries, t.binary->path))
    return core::str_cat(
        out, "; program ", quoted_program(*t.binary), " is named with a SHA-256 ",
        t.binary->sha256.empty() ? "(give --sha256 HEX)" : "that is not its executable's", ": ",
        binaries_text(rule.binaries));
  return core::str_cat(out, "; program ", quoted_program(*t.binary), " is not in ",
                       binaries_text(rule.binaries));
}

// One line per rule: why it matched or not.
std::string why(const compiled_rule& rule, const rule_outcome& o, const request_target& t) {
  using core::errc;
  const model::rule& src = *rule.source;
  if (o.reason == errc::host_denied) {
    std::string patterns;
    if (!src.hosts.empty()) patterns = list(src.hosts);
    if (!src.host_regex.empty())
      patterns += core::str_cat(patterns.empty() ? "" : " or ", "regex ", list(src.host_regex));
    if (t.host->is_ip() && (!src.host_regex.empty() ||
                            std::any_of(src.hosts.begin(), src.hosts.end(),
                                        [](const std::string& h) { return h.starts_with("*."); })))
      patterns += " (wildcards and regexes never match an IP literal)";
    return core::str_cat("host does not match ", patterns);
  }
  std::string out = core::str_cat("host matches '", o.host_matched_by, "'");
  if (o.reason == errc::port_denied)
    return core::str_cat(out, "; port ", t.port, " is not in [", ports_text(rule.ports), "]");
  out += core::str_cat(", port ", t.port, " ok");
  if (o.reason == errc::scheme_denied)
    return core::str_cat(
        out, "; ", t.effective_scheme() == model::scheme::https ? "a CONNECT tunnel" : "plain http",
        " is not in schemes [", schemes_text(rule.source->schemes), "]");
  if (t.is_connect) {
    if (o.reason == errc::needs_inspection && (rule.inject.active || rule.redact.active))
      return core::str_cat(out,
                           "; the rule injects or redacts, which needs the requests an opaque "
                           "tunnel hides (set inspect: true)");
    if (o.reason == errc::needs_inspection)
      return core::str_cat(out,
                           "; the rule checks methods/paths, which an opaque tunnel hides "
                           "(set inspect: true)");
    if (o.reason == errc::binary_denied) return with_binaries(rule, o, t, out);
    if (!rule.binaries.empty()) out += core::str_cat(", program ", t.binary->path, " ok");
    if (rule.inspect)
      return core::str_cat(out,
                           "; allows the tunnel and inspects it (inner requests are "
                           "checked one by one)");
    return core::str_cat(out, "; allows the tunnel (opaque: methods and paths are not seen)");
  }
  if (!t.upgrade.empty()) {
    if (o.reason == errc::protocol_denied)
      return core::str_cat(out, "; protocol websocket is not in the rule's protocols");
    if (o.reason == errc::upgrade_denied)
      return core::str_cat(out, "; upgrade '", t.upgrade, "' is not in ", list(rule.upgrades));
    out += core::str_cat(", upgrade ", t.upgrade, " ok");
    // WebSocket messages are held and checked one by one (docs/policy.md, WebSocket messages).
    if (t.upgrade == "websocket") {
      out += core::str_cat(" (each message checked whole, up to ", src.websocket.max_message_bytes,
                           " bytes");
      if (src.websocket.messages_per_minute != 0)
        out += core::str_cat(", ", src.websocket.messages_per_minute, " per minute");
      out += ")";
    }
  }
  if (!src.methods.empty()) {
    if (o.reason == errc::method_denied)
      return core::str_cat(out, "; method ", t.method, " is not in ", list(src.methods));
    out += core::str_cat(", method ", t.method, " ok");
  }
  if (!src.paths.empty()) {
    if (o.reason == errc::path_denied && o.dot_segments)
      return core::str_cat(out,
                           "; path has '.' or '..' segments, which the rule's paths "
                           "never accept");
    if (o.reason == errc::path_denied)
      return core::str_cat(out, "; path ", t.path, " matches none of ", list(src.paths));
    out += core::str_cat(", path ", t.path, " ok");
  }
  return with_binaries(rule, o, t, out);
}

// Runs decide() and writes the per-rule reasoning and the decision; returns the decision.
decision step(const snapshot& s, const compiled_agent& agent, const request_target& t,
              std::string& text) {
  bool decided = false;
  for (std::size_t i = 0; i < agent.rules.size(); ++i) {
    const compiled_rule& rule = *agent.rules[i];
    text += core::str_cat("  ", i + 1, ". rule ", rule.name,
                          rule.mode == model::mode::report ? " (report mode)" : "", ": ");
    if (decided) {
      text += "not considered (an earlier rule allowed)\n";
      continue;
    }
    const rule_outcome o = evaluate_rule(rule, t);
    text += why(rule, o, t) + "\n";
    decided = o.reason == core::errc::ok;
  }
  if (agent.rules.empty()) text += "  (the agent has no rules)\n";
  decision d = s.decide(agent, t);
  if (d.reason == core::errc::ok) {
    text += core::str_cat("  => allowed by rule ", d.rule->name, "\n");
  } else {
    text += core::str_cat("  => denied: ", core::name(d.reason), " (", d.detail, ")\n");
    if (d.report_only)
      text += core::str_cat("     report mode applies (",
                            d.rule ? core::str_cat("rule ", d.rule->name) : "policy",
                            "): the request goes through and is recorded as would-deny\n");
  }
  return d;
}

// The SSRF guard, where it can be applied without DNS. Returns false when it refuses.
bool guard(const snapshot& s, const net::authority& target, const compiled_rule* rule,
           std::string& text) {
  std::span<const net::cidr> extra;
  if (rule != nullptr) extra = rule->allow_cidrs;
  auto verdict_text = [](const net::guard_verdict& v) {
    return v.allowed ? std::string("allowed") : core::str_cat("refused (", v.category, ")");
  };
  if (rule != nullptr && !rule->pinned.empty()) {
    bool any = false;
    text += core::str_cat("address guard: rule ", rule->name, " pins its addresses (no DNS):\n");
    for (const auto& a : rule->pinned) {
      const auto v = s.guard().check(a, target.port, extra);
      any = any || v.allowed;
      text += core::str_cat("  ", a.to_string(), ": ", verdict_text(v), "\n");
    }
    return any;
  }
  if (target.host.is_ip()) {
    const auto v = s.guard().check(target.host.address, target.port, extra);
    text += core::str_cat("address guard: ", target.host.text,
                          " is an IP literal: ", verdict_text(v), "\n");
    return v.allowed;
  }
  text += core::str_cat(
      "address guard: DNS is not resolved here; at run time every address ", target.host.text,
      " resolves to is checked, and ",
      s.model().network.block_private
          ? "loopback, private, link-local, metadata and other special-purpose addresses are "
            "refused unless network.allow_cidrs or the rule's allow_cidrs name them\n"
          : "(network.block_private is false) only the proxy's own endpoints are refused\n");
  return true;
}

// What the deciding rule adds to requests and takes out of responses: header and parameter
// names, secret and redactor names, never a template or a value.
void credentials(const snapshot& s, const compiled_rule& rule, std::string& text) {
  const auto secrets = s.secrets();
  auto used = [&](const secret_template& t) {
    std::string names;
    for (const auto& part : t.parts)
      if (part.secret < secrets.size())
        names += core::str_cat(names.empty() ? "" : ", ", secrets[part.secret].name);
    return names.empty() ? std::string{} : core::str_cat(" (secret ", names, ")");
  };
  const compiled_injection& in = rule.inject;
  bool injects_secret = false;
  if (in.active) {
    std::string what;
    auto add = [&](std::string item) { what += core::str_cat(what.empty() ? "" : ", ", item); };
    for (const auto& [name, t] : in.headers)
      add(core::str_cat("header ", name, used(t)));
    for (const auto& [name, t] : in.query)
      add(core::str_cat("query parameter ", name, used(t)));
    if (in.has_basic) {
      secret_template both = in.basic_username;
      both.parts.insert(both.parts.end(), in.basic_password.parts.begin(),
                        in.basic_password.parts.end());
      add(core::str_cat("Basic credentials", used(both)));
    }
    if (!in.require.empty()) {
      std::string names;
      for (std::size_t i : in.require)
        names += core::str_cat(names.empty() ? "" : ", ", secrets[i].name);
      add(core::str_cat("requires the placeholder of ", names));
    }
    text += core::str_cat("inject:  rule ", rule.name, " sets ", what, "\n");
    injects_secret = !in.secrets.empty();
  }
  if (rule.redact.active) {
    text += core::str_cat("redact:  responses are redacted with ", list(rule.redact.redactors),
                          " and every secret's value; text bodies are cut off after ",
                          rule.redact.max_bytes, " bytes\n");
  } else if (injects_secret) {
    text += "redact:  every secret's value is redacted from responses (the rule injects one)\n";
  }
}

}  // namespace

explanation explain(const snapshot& s, const explain_request& r) {
  explanation out;
  auto input_error = [&](std::string message) {
    out.input_error = true;
    out.allowed = false;
    out.text = message + "\n";
    return out;
  };
  const compiled_agent* agent = s.find_agent(r.agent);
  if (agent == nullptr) {
    std::string names;
    for (const auto& a : s.agents())
      names += core::str_cat(names.empty() ? "" : ", ", a.name);
    return input_error(core::str_cat("unknown agent '", r.agent,
                                     "' (agents: ", names.empty() ? "none" : names, ")"));
  }
  if (r.method.empty() ||
      !std::all_of(r.method.begin(), r.method.end(), [](char c) { return c > ' ' && c < 127; }))
    return input_error("invalid method");

  // The target, in the forms the proxy sees: absolute http:// URL, or CONNECT authority.
  std::optional<net::authority> target;
  std::string path_storage;
  std::string_view path;
  bool https = false;
  const bool connect = r.method == "CONNECT";
  if (istarts_with(r.url, "http://")) {
    if (connect) return input_error("CONNECT takes host:port or an https:// URL");
    const auto u = net::parse_http_url(r.url);
    if (!u) return input_error(core::str_cat("invalid URL '", r.url, "'"));
    target = u->target;
    path_storage = u->path_and_query;
    path = path_only(path_storage);
  } else if (istarts_with(r.url, "https://")) {
    // The same syntax as http:// (what the inner request will look like), port 443 by default.
    const std::string_view rest = r.url.substr(8);
    const auto u = net::parse_http_url(core::str_cat("http://", rest));
    if (!u) return input_error(core::str_cat("invalid URL '", r.url, "'"));
    target = net::parse_authority(rest.substr(0, rest.find_first_of("/?")), 443, false);
    if (!target) return input_error(core::str_cat("invalid URL '", r.url, "'"));
    path_storage = u->path_and_query;
    path = path_only(path_storage);
    https = true;
  } else if (connect) {
    target = net::parse_authority(r.url, 0, true);
    if (!target)
      return input_error(
          core::str_cat("invalid CONNECT target '", r.url, "' (expected host:port)"));
  } else {
    return input_error("the URL must start with http:// or https:// (or use CONNECT host:port)");
  }

  std::string& text = out.text;
  const auto& m = s.model();
  text += core::str_cat("policy:  ", m.source, " (version ", m.version.substr(0, 12), ", mode ",
                        m.mode == model::mode::report ? "report" : "enforce", ")\n");
  text += core::str_cat("agent:   ", agent->name, " (", agent->rules.size(), " rules)\n");
  text +=
      core::str_cat("request: ", r.method, " ", r.url,
                    r.upgrade.empty() ? "" : core::str_cat(" (Upgrade: ", r.upgrade, ")"), "\n");
  text += core::str_cat("target:  ", host_text(*target),
                        target->host.is_ip() ? " (IP literal)" : "", "\n");

  request_target t;
  t.host = &target->host;
  t.port = target->port;
  t.binary = r.binary;
  if (r.binary) text += core::str_cat("program: ", r.binary->path, "\n");

  decision final;
  const compiled_rule* connection_rule = nullptr;
  if (connect || https) {
    t.method = "CONNECT";
    t.is_connect = true;
    text += core::str_cat("CONNECT ", host_text(*target),
                          https && !connect ? " (the tunnel an https:// URL needs)" : "", ":\n");
    final = step(s, *agent, t, text);
    connection_rule = final.rule;
    if (https && !connect && final.allowed()) {
      if (final.rule != nullptr && final.rule->inspect) {
        t.method = r.method;
        t.path = path;
        t.upgrade = r.upgrade;
        t.is_connect = false;
        t.scheme = model::scheme::https;  // inside the TLS tunnel
        const auto protocols = final.rule->source ? final.rule->source->protocols : 0x7;
        text += core::str_cat("inner request ", r.method, " ", path, " (rule ", final.rule->name,
                              " inspects the tunnel; ALPN offers ",
                              (protocols & model::protocol_h2) ? "h2 and http/1.1" : "http/1.1",
                              "; the rule's protocols: ", protocols_text(protocols), "):\n");
        final = step(s, *agent, t, text);
      } else {
        text += core::str_cat("inner request ", r.method, " ", path,
                              ": not checked (the tunnel is opaque)\n");
      }
    }
  } else {
    t.method = r.method;
    t.path = path;
    t.upgrade = r.upgrade;
    text += core::str_cat(r.method, " ", path, " (plain HTTP):\n");
    final = step(s, *agent, t, text);
    connection_rule = final.rule;
  }

  out.allowed = final.allowed();
  out.rule = final.rule;
  // Applied even to a denied request, so the answer to "and if I add a rule?" is visible too.
  const bool guard_ok = guard(s, *target, connection_rule, text);
  if (out.allowed && !guard_ok) {
    out.allowed = false;
    text += core::str_cat("decision: denied: ", core::name(core::errc::destination_ip_prohibited),
                          " (the address guard applies in every mode)\n");
  } else if (final.reason == core::errc::ok) {
    text += core::str_cat("decision: allowed (rule ", final.rule->name, ")\n");
    credentials(s, *final.rule, text);
  } else if (final.report_only) {
    text += core::str_cat("decision: allowed in report mode; would be denied: ",
                          core::name(final.reason), " (", final.detail, ")\n");
  } else {
    text +=
        core::str_cat("decision: denied: ", core::name(final.reason), " (", final.detail, ")\n");
  }
  return out;
}

}  // namespace airlock::policy
