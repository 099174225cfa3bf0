#include "policy/compiler.hpp"

#include "core/regular_file.hpp"
#include "core/str_cat.hpp"
#include "policy/checks_compiler.hpp"
#include "policy/credentials_compiler.hpp"
#include "policy/dlp_parser.hpp"
#include "policy/endpoint.hpp"
#include "policy/host_pattern.hpp"
#include "policy/key_text.hpp"
#include "policy/matcher.hpp"
#include "policy/operators.hpp"
#include "policy/parser.hpp"
#include "policy/ports.hpp"
#include "policy/secret_references.hpp"
#include "policy/secrets_compiler.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_map>

namespace airlock::policy {
namespace {

bool is_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

class checker {
 public:
  checker(const mark_table& marks, error_sink& errors) : marks_(marks), errors_(errors) {}

  void error(const std::string& key, std::string message) {
    errors_.add(marks_.find(key), key, std::move(message));
  }
  // Entries the parser already complained about are skipped.
  bool skip(const std::string& key) const { return errors_.reported(key); }
  std::size_t error_count() const { return errors_.size(); }
  bool has_unknown_key(const std::string& key) const { return errors_.has_unknown_key(key); }

  std::vector<net::cidr> cidrs(const std::vector<std::string>& list, const std::string& key) {
    std::vector<net::cidr> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string k = indexed(key, i);
      if (skip(k)) continue;
      if (auto c = net::cidr::parse(list[i]))
        out.push_back(*c);
      else
        error(k, core::str_cat("invalid CIDR '", list[i], "' (e.g. 10.0.0.0/8, fd00::/8)"));
    }
    return out;
  }

  std::unique_ptr<re2::RE2> regex(const std::string& pattern, const std::string& key,
                                  bool case_sensitive) {
    re2::RE2::Options options;
    options.set_log_errors(false);  // the error goes into the load error, not to stderr
    options.set_case_sensitive(case_sensitive);
    auto re = std::make_unique<re2::RE2>(pattern, options);
    if (!re->ok()) {
      error(key, core::str_cat("invalid regular expression: ", re->error()));
      return nullptr;
    }
    return re;
  }

  // Opened without blocking and checked to be a regular file (core/regular_file.hpp): a FIFO
  // named here would hang `airlock check` and a reload in open(2).
  void readable_file(const std::string& path, const std::string& key) {
    if (path.empty() || skip(key)) return;
    const auto f = core::open_regular_file(path);
    if (f.problem == core::file_problem::cannot_open)
      error(key, core::str_cat("cannot read '", path, "': ", f.error));
    else if (f.problem != core::file_problem::none)
      error(key, core::str_cat("'", path, "' ", f.error));
  }

  void endpoint(const std::string& text, const std::string& key) {
    if (skip(key)) return;
    if (!parse_endpoint(text))
      error(key, core::str_cat("invalid address '", text,
                               "' (expected ip:port, e.g. 127.0.0.1:3128 or [::1]:3128)"));
  }

  const mark_table& marks() const { return marks_; }

 private:
  const mark_table& marks_;
  error_sink& errors_;
};

std::shared_ptr<compiled_rule::matcher> compile_hosts(checker& c, model::rule& r,
                                                      const std::string& key) {
  auto m = std::make_shared<compiled_rule::matcher>();
  for (std::size_t i = 0; i < r.hosts.size(); ++i) {
    const std::string k = indexed(key + ".hosts", i);
    if (c.skip(k)) continue;
    std::string message;
    auto pattern = parse_host_pattern(r.hosts[i], message);
    if (!pattern) {
      c.error(k, std::move(message));
      continue;
    }
    r.hosts[i] = pattern->text;
    if (pattern->wildcard)
      m->suffixes.push_back({std::move(pattern->text), std::move(pattern->dot_suffix)});
    else
      m->exact.insert(std::move(pattern->text));
  }
  for (std::size_t i = 0; i < r.host_regex.size(); ++i) {
    const std::string k = indexed(key + ".host_regex", i);
    if (c.skip(k)) continue;
    // Host names compare case-insensitively (RFC 4343); paths do not (RFC 3986 section 6.2.2.1).
    if (auto re = c.regex(r.host_regex[i], k, false)) m->host_regex.push_back(std::move(re));
  }
  return m;
}

void compile_rule(checker& c, const model::policy& p, const credential_sources& credentials,
                  error_sink& errors, model::rule& r, std::size_t index, compiled_rule& out) {
  const std::string key = indexed("rules", index);
  out.index = index;
  out.source = &r;
  out.name = r.name;
  out.inspect = r.inspect;
  out.mode = r.mode.value_or(p.mode);

  // When the rule is not a mapping, or has a misspelt key, "missing name" or "matches no
  // host" would only repeat that error.
  const bool broken = c.skip(key) || c.has_unknown_key(key);
  const std::size_t errors_before = c.error_count();
  if (!c.skip(key + ".name")) {
    if (!c.marks().has(key + ".name")) {
      if (!broken) c.error(key, "missing required key 'name'");
    } else if (!is_name(r.name)) {
      c.error(key + ".name",
              core::str_cat("invalid rule name '", r.name, "' (use letters, digits, _ . -)"));
    }
  }

  auto m = compile_hosts(c, r, key);
  if (r.hosts.empty() && r.host_regex.empty() && !broken && !c.skip(key + ".hosts") &&
      !c.skip(key + ".host_regex")) {
    std::string at = key;
    if (c.marks().has(key + ".hosts"))
      at = key + ".hosts";
    else if (c.marks().has(key + ".host_regex"))
      at = key + ".host_regex";
    c.error(at, "the rule matches no host; set hosts or host_regex");
  }

  out.ports = merge_port_ranges(r.ports);
  if (!r.schemes.empty()) {
    out.allows_http =
        std::find(r.schemes.begin(), r.schemes.end(), model::scheme::http) != r.schemes.end();
    out.allows_https =
        std::find(r.schemes.begin(), r.schemes.end(), model::scheme::https) != r.schemes.end();
  }

  // `methods: []` or `paths: []` could mean "none" or "any": refused rather than guessed.
  auto non_empty = [&](const std::vector<std::string>& list, std::string_view name) {
    const std::string k = core::str_cat(key, ".", name);
    if (list.empty() && c.marks().has(k) && !c.skip(k))
      c.error(k, "must not be empty (omit the key to allow any)");
  };
  non_empty(r.methods, "methods");
  non_empty(r.paths, "paths");

  for (std::size_t i = 0; i < r.methods.size(); ++i) {
    const std::string k = indexed(key + ".methods", i);
    if (c.skip(k)) continue;
    if (!is_token(r.methods[i])) {
      c.error(k, core::str_cat("invalid method '", r.methods[i], "' (not an HTTP token)"));
      continue;
    }
    r.methods[i] = upper(std::move(r.methods[i]));
    if (r.methods[i] == "CONNECT") {
      c.error(k,
              "CONNECT cannot be listed: a rule allows tunnels with schemes: [https] (the "
              "default allows both http and https; see inspect)");
      continue;
    }
    m->methods.push_back(r.methods[i]);
  }
  for (std::size_t i = 0; i < r.paths.size(); ++i) {
    const std::string k = indexed(key + ".paths", i);
    if (c.skip(k)) continue;
    if (auto re = c.regex(r.paths[i], k, true)) m->paths.push_back(std::move(re));
  }
  for (std::size_t i = 0; i < r.upgrades.size(); ++i) {
    const std::string k = indexed(key + ".upgrades", i);
    if (c.skip(k)) continue;
    // RFC 9110 section 7.8: protocol-name ["/" protocol-version], compared case-insensitively.
    const std::string& u = r.upgrades[i];
    const std::size_t slash = u.find('/');
    const bool ok = slash == std::string::npos
                        ? is_token(u)
                        : is_token(std::string_view(u).substr(0, slash)) &&
                              is_token(std::string_view(u).substr(slash + 1));
    if (!ok) {
      c.error(k, core::str_cat("invalid upgrade protocol '", u, "' (e.g. websocket)"));
      continue;
    }
    r.upgrades[i] = lower(std::move(r.upgrades[i]));
    out.upgrades.push_back(r.upgrades[i]);
  }
  for (std::size_t i = 0; i < r.addresses.size(); ++i) {
    const std::string k = indexed(key + ".addresses", i);
    if (c.skip(k)) continue;
    const auto host = net::normalize_host(r.addresses[i]);
    if (!host || !host->is_ip()) {
      c.error(k, core::str_cat("invalid address '", r.addresses[i], "' (expected an IP literal)"));
      continue;
    }
    out.pinned.push_back(host->address);
  }
  out.allow_cidrs = c.cidrs(r.allow_cidrs, key + ".allow_cidrs");
  out.binaries = r.binaries;
  if (r.inspect && (p.tls.ca_cert.empty() || p.tls.ca_key.empty()) && !c.skip(key + ".inspect"))
    c.error(key + ".inspect", "inspect: true needs tls.ca_cert and tls.ca_key");

  out.checks = compile_checks(r, [&](const std::string& k, std::string message) {
    const std::string full = core::str_cat(key, ".", k);
    if (!c.skip(full)) c.error(full, std::move(message));
  });
  out.mcp = compile_mcp(r.mcp, [&](const std::string& k, std::string message) {
    const std::string full = core::str_cat(key, ".", k);
    if (!c.skip(full)) c.error(full, std::move(message));
  });
  // The MCP filter reads JSON-RPC in HTTP bodies; an upgraded stream would carry it unread.
  if (r.mcp.present && !r.upgrades.empty() && !c.skip(key + ".upgrades"))
    c.error(key + ".upgrades",
            "a rule with mcp cannot allow upgrades: the MCP filter reads HTTP "
            "bodies, not WebSocket messages, which would pass uninspected");
  // After compile_hosts: the host binding check needs the normalised exact hosts.
  compile_credentials(r, key, credentials, c.marks(), errors, out.inject, out.redact);
  // Injection and redaction work on requests and responses, which an opaque tunnel hides.
  out.checks_requests = !r.methods.empty() || !r.paths.empty() || out.checks.any() ||
                        r.mcp.present || r.inject.present || r.redact.present;
  // Port 443 is HTTPS: through an opaque tunnel none of these checks could ever apply, so the
  // rule would either refuse every HTTPS request or (worse) be read as protecting it. Other
  // ports may carry plain HTTP, where the checks do apply (a CONNECT to them is refused at run
  // time with needs_inspection). The same holds for injection and redaction.
  // (Only for an otherwise valid rule: a typo in a path should not bring this on as well.)
  if (out.checks_requests && !r.inspect && !broken && c.error_count() == errors_before &&
      out.allows_https && contains_port(out.ports, 443)) {
    const std::string at = c.marks().has(key + ".ports") ? key + ".ports" : key;
    if (!c.skip(at))
      c.error(at,
              core::str_cat("rule '", r.name,
                            "' checks requests (methods, paths, query, headers, body or mcp) or "
                            "injects or redacts, which an HTTPS tunnel on port 443 hides: set "
                            "inspect: true (with tls), or list only plain-HTTP ports, or "
                            "schemes: [http]"));
  }
  out.match = std::move(m);
}

void check_settings(checker& c, const model::policy& p, bool read_secrets) {
  c.endpoint(p.listen.proxy, "listen.proxy");
  if (!p.listen.admin.empty()) {
    c.endpoint(p.listen.admin, "listen.admin");
    const auto proxy = parse_endpoint(p.listen.proxy);
    const auto admin = parse_endpoint(p.listen.admin);
    if (proxy && admin && proxy->port() != 0 && *proxy == *admin)
      c.error("listen.admin", "must differ from listen.proxy");
  }
  if (p.tls.ca_cert.empty() != p.tls.ca_key.empty())
    c.error(p.tls.ca_cert.empty() ? "tls.ca_key" : "tls.ca_cert",
            "tls.ca_cert and tls.ca_key go together: set both or neither");
  c.readable_file(p.tls.ca_cert, "tls.ca_cert");
  // The CA key is a secret like the others: not read where secrets are not (the launcher).
  if (read_secrets) c.readable_file(p.tls.ca_key, "tls.ca_key");
  c.readable_file(p.tls.upstream_ca, "tls.upstream_ca");
  // The store's TLS files (state.tls): read at connect time, so checked here.
  c.readable_file(p.state.tls.ca, "state.tls.ca");
  c.readable_file(p.state.tls.cert, "state.tls.cert");
  if (read_secrets) c.readable_file(p.state.tls.key, "state.tls.key");
}

void compile_agent(checker& c, const std::vector<compiled_rule>& rules, model::agent& a,
                   compiled_agent& out) {
  const std::string key = core::str_cat("agents.", a.name);
  out.name = a.name;
  // Basic credentials are "name:token": a name must not contain ':' (RFC 7617 section 2).
  if (!is_name(a.name))
    c.error(key, core::str_cat("invalid agent name '", a.name, "' (use letters, digits, _ . -)"));
  for (std::size_t i = 0; i < a.rules.size(); ++i) {
    const std::string k = indexed(key + ".rules", i);
    if (c.skip(k)) continue;
    const auto it = std::find_if(rules.begin(), rules.end(),
                                 [&](const compiled_rule& r) { return r.name == a.rules[i]; });
    if (it != rules.end()) {
      out.rules.push_back(&*it);
      continue;
    }
    std::string message = core::str_cat("unknown rule '", a.rules[i], "'");
    const compiled_rule* best = nullptr;
    std::size_t best_distance = 3;
    for (const auto& r : rules) {
      const std::size_t d = edit_distance(a.rules[i], r.name);
      if (!r.name.empty() && d < best_distance) {
        best = &r;
        best_distance = d;
      }
    }
    if (best != nullptr) message += core::str_cat("; did you mean '", best->name, "'?");
    c.error(k, std::move(message));
  }
  if (!a.token_sha256.empty() || c.marks().has(key + ".token_sha256")) {
    if (!c.skip(key + ".token_sha256")) {
      if (!is_hex64(a.token_sha256)) {
        // The value is not echoed: someone may have pasted the token itself here.
        c.error(key + ".token_sha256",
                "must be 64 hex digits: the SHA-256 of the token (printf %s TOKEN | sha256sum)");
      } else {
        a.token_sha256 = lower(std::move(a.token_sha256));
        out.token_sha256 = a.token_sha256;
      }
    }
  }
  out.sources = c.cidrs(a.sources, key + ".sources");
}

}  // namespace

std::shared_ptr<const snapshot> compiler::compile(model::policy policy, const mark_table& marks,
                                                  const load_options& options, error_sink& errors) {
  checker c(marks, errors);
  // The snapshot owns the model first, so compiled rules can point into it.
  std::shared_ptr<snapshot> s(new snapshot(std::move(policy)));
  model::policy& p = s->model_;

  check_settings(c, p, options.read_secrets);
  auto allow = c.cidrs(p.network.allow_cidrs, "network.allow_cidrs");
  // Secret values are read here, at every load: a reload is how a rotated secret is taken up.
  // Before the rules, whose templates refer to the secrets by index.
  s->secrets_ = compile_secrets(p, marks, errors, options.read_secrets);
  s->redactors_ = compile_redactors(p, marks, errors);
  check_dlp_classes(p, marks, errors);
  check_operators(p, marks, errors);
  const credential_sources credentials{s->secrets_, p.secrets, s->redactors_,
                                       p.limits.response_bytes};

  s->rules_.resize(p.rules.size());
  // Names and tokens seen so far, by first index: duplicates found in linear time.
  std::unordered_map<std::string_view, std::size_t> rule_names, tokens;
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    compile_rule(c, p, credentials, errors, p.rules[i], i, s->rules_[i]);
    if (!p.rules[i].binaries.empty()) s->names_binaries_ = true;
    const std::string& name = p.rules[i].name;
    if (name.empty()) continue;
    const auto [at, fresh] = rule_names.emplace(name, i);
    if (fresh) continue;
    const std::size_t j = at->second;
    // The first may stand in another file (`include:`).
    const model::mark first = c.marks().find(indexed("rules", j));
    const model::mark here = c.marks().find(indexed("rules", i));
    const bool elsewhere =
        first.file != here.file && (!first.file || !here.file || *first.file != *here.file);
    c.error(indexed("rules", i) + ".name",
            core::str_cat("duplicate rule name '", name, "' (first at ",
                          elsewhere ? (first.file ? *first.file : p.source) + " " : "", "line ",
                          first.line > 0 ? first.line : p.rules[j].at.line, ")"));
  }

  // rules_ is complete: pointers into it stay valid from here on.
  s->agents_.resize(p.agents.size());
  for (std::size_t i = 0; i < p.agents.size(); ++i) {
    compile_agent(c, s->rules_, p.agents[i], s->agents_[i]);
    const std::string& token = s->agents_[i].token_sha256;
    if (token.empty()) continue;
    // A Bearer token must name exactly one agent.
    if (const auto [at, fresh] = tokens.emplace(token, i); !fresh)
      c.error(core::str_cat("agents.", p.agents[i].name, ".token_sha256"),
              core::str_cat("same token as agent '", p.agents[at->second].name, "'"));
  }

  s->guard_ = std::make_unique<net::address_guard>(p.network.block_private, std::move(allow),
                                                   options.own_endpoints);
  hide_secrets(errors, s->secrets_);
  if (!errors.empty()) return nullptr;
  return s;
}

}  // namespace airlock::policy
