#include "policy/credentials_compiler.hpp"

#include "core/str_cat.hpp"
#include "net/host.hpp"
#include "policy/key_text.hpp"
#include "policy/redactor_names.hpp"
#include "policy/secret_references.hpp"
#include "policy/secrets_compiler.hpp"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::policy {
namespace {

// RFC 9110 section 5.5: a field value holds no control character but HTAB.
bool header_safe(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

// Fields that frame the message (RFC 9112 section 6), belong to one connection (RFC 9110
// section 7.6.1) or to the proxy hop (section 11.7): the proxy manages them, a rule does not.
bool refused_header(std::string_view lower_name) {
  static constexpr std::string_view refused[] = {"host",
                                                 "content-length",
                                                 "transfer-encoding",
                                                 "connection",
                                                 "keep-alive",
                                                 "te",
                                                 "trailer",
                                                 "upgrade",
                                                 "expect",
                                                 "proxy-authorization",
                                                 "proxy-authenticate",
                                                 "proxy-connection"};
  return lower_name.starts_with("proxy-") ||
         std::find(std::begin(refused), std::end(refused), lower_name) != std::end(refused);
}

class context {
 public:
  context(const mark_table& marks, error_sink& errors, const std::string& rule_key)
      : marks_(marks), errors_(errors), rule_key_(rule_key) {}
  // `key` is relative to the rule. One error per key: a later check of a key that already has
  // one stays silent.
  void error(const std::string& key, std::string message) {
    const std::string full = full_key(key);
    if (!errors_.reported(full)) errors_.add(marks_.find(full), full, std::move(message));
  }
  bool skip(const std::string& key) const { return errors_.reported(full_key(key)); }
  bool present(const std::string& key) const { return marks_.has(full_key(key)); }
  bool broken(const std::string& key) const {
    return skip(key) || errors_.has_unknown_key(full_key(key));
  }

 private:
  std::string full_key(const std::string& key) const { return core::str_cat(rule_key_, ".", key); }
  const mark_table& marks_;
  error_sink& errors_;
  const std::string& rule_key_;
};

enum class carrier { header, basic_username, basic_password, query };

// One template: parsed, its literal text and the values of the secrets it uses checked for
// where it goes. Adds the secrets to `used` (each once). False (with an error) when unusable.
bool compile_value(context& c, const credential_sources& src, const std::string& key,
                   std::string_view text, carrier where, secret_template& out,
                   std::vector<std::size_t>& used) {
  if (c.skip(key)) return false;
  std::string problem;
  out = parse_secret_template(text, src.secrets, problem);
  if (!problem.empty()) {
    c.error(key, std::move(problem));
    return false;
  }
  const bool in_header = where != carrier::query;
  for (const auto& part : out.parts) {
    // A value written out in the policy file would be shown wherever the policy is (GET
    // /policy, reviews, version control): it belongs in the secret's source.
    for (const compiled_secret& s : src.secrets) {
      if (!s.value.empty() && part.text.find(s.value.reveal()) != std::string::npos) {
        c.error(key, core::str_cat("holds the value of secret '", s.name,
                                   "' as literal text: write ${secrets.", s.name, "}"));
        return false;
      }
    }
    for (unsigned char ch : part.text) {
      if (ch == '\r' || ch == '\n' || ch == '\0') {
        c.error(key, "must not hold CR, LF or NUL");
        return false;
      }
      if (in_header && !header_safe(ch)) {
        c.error(key, "holds a control character, which a header field cannot carry");
        return false;
      }
      if (where == carrier::basic_username && ch == ':') {
        c.error(key, "a Basic user-id cannot hold ':' (RFC 7617 section 2)");
        return false;
      }
    }
  }
  for (const auto& part : out.parts) {
    if (part.secret == secret_template::no_secret) continue;
    const compiled_secret& s = src.secrets[part.secret];
    // Values that were not read (load_options::read_secrets off, or unreadable: an error of
    // its own) cannot be checked. Only the name is ever printed.
    const std::string_view v = s.value.reveal();
    if (in_header && !std::all_of(v.begin(), v.end(), [](char ch) {
          return header_safe(static_cast<unsigned char>(ch));
        })) {
      c.error(key, core::str_cat("secret '", s.name, "' holds characters a header cannot carry"));
      return false;
    }
    if (where == carrier::basic_username && v.find(':') != std::string_view::npos) {
      c.error(key, core::str_cat("secret '", s.name,
                                 "' holds a ':', which a Basic user-id cannot carry (RFC 7617 "
                                 "section 2)"));
      return false;
    }
    if (std::find(used.begin(), used.end(), part.secret) == used.end()) used.push_back(part.secret);
  }
  return true;
}

void compile_headers(context& c, const model::inject& in, const credential_sources& src,
                     compiled_injection& out) {
  std::vector<std::string> seen;  // lower-case names, including refused ones
  for (const auto& [name, text] : in.headers) {
    const std::string key = core::str_cat("inject.headers.", name);
    if (c.skip(key)) continue;
    if (!is_token(name)) {
      c.error(key, core::str_cat("invalid header name ", quoted_unless_secret(name, src.secrets),
                                 " (not an HTTP token)"));
      continue;
    }
    std::string lname = lower(name);
    if (std::find(seen.begin(), seen.end(), lname) != seen.end()) {
      c.error(key, core::str_cat("duplicate header ", quoted_unless_secret(name, src.secrets),
                                 " (names are case-insensitive)"));
      continue;
    }
    seen.push_back(lname);
    if (refused_header(lname)) {
      c.error(key, core::str_cat(quoted_unless_secret(name, src.secrets),
                                 " cannot be injected: it frames the message or belongs to the "
                                 "connection, and the proxy sets it itself"));
      continue;
    }
    if (lname == "authorization" && in.has_basic) {
      c.error(key, "basic sets Authorization too: give one or the other");
      continue;
    }
    secret_template t;
    if (compile_value(c, src, key, text, carrier::header, t, out.secrets))
      out.headers.emplace_back(name, std::move(t));
  }
}

void compile_query(context& c, const model::inject& in, const credential_sources& src,
                   compiled_injection& out) {
  for (const auto& [name, text] : in.query) {
    const std::string key = core::str_cat("inject.query.", name);
    if (c.skip(key)) continue;
    if (name.empty()) {
      c.error(key, "parameter names must not be empty");
      continue;
    }
    if (name.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      c.error(key, "parameter names must not hold CR, LF or NUL");
      continue;
    }
    secret_template t;
    if (compile_value(c, src, key, text, carrier::query, t, out.secrets))
      out.query.emplace_back(name, std::move(t));
  }
}

void compile_basic(context& c, const model::inject& in, const credential_sources& src,
                   compiled_injection& out) {
  if (!in.has_basic || c.skip("inject.basic")) return;
  const bool user = c.present("inject.basic.username");
  const bool pass = c.present("inject.basic.password");
  if (!user || !pass) {
    if (!c.broken("inject.basic"))
      c.error("inject.basic",
              core::str_cat("missing required key '", user ? "password" : "username",
                            "' (basic needs username and password)"));
    return;
  }
  const bool user_ok = compile_value(c, src, "inject.basic.username", in.basic_username,
                                     carrier::basic_username, out.basic_username, out.secrets);
  const bool pass_ok = compile_value(c, src, "inject.basic.password", in.basic_password,
                                     carrier::basic_password, out.basic_password, out.secrets);
  out.has_basic = user_ok && pass_ok;
}

void compile_require(context& c, const model::inject& in, const credential_sources& src,
                     compiled_injection& out) {
  const std::string key = "inject.require";
  if (c.present(key) && in.require.empty() && !c.skip(key))
    c.error(key, "must not be empty (omit the key to require no placeholder)");
  for (std::size_t i = 0; i < in.require.size(); ++i) {
    const std::string k = indexed(key, i);
    if (c.skip(k)) continue;
    const std::string& name = in.require[i];
    const std::size_t index = find_secret(src.secrets, name);
    if (index == secret_template::no_secret) {
      c.error(k, unknown_secret(name, src.secrets));
      continue;
    }
    if (std::find(out.require.begin(), out.require.end(), index) != out.require.end()) {
      c.error(k, core::str_cat("duplicate secret '", name, "'"));
      continue;
    }
    if (index >= src.secret_models.size() || !src.secret_models[index].has_placeholder) {
      c.error(k, core::str_cat("secret '", name, "' has no placeholder to require (set secrets.",
                               name, ".placeholder)"));
      continue;
    }
    // A placeholder that failed its own checks has an error there already.
    if (!src.secrets[index].placeholder.empty()) out.require.push_back(index);
  }
}

// Exact hosts of the rule (wildcards and regexes are checked per request by the proxy).
std::vector<net::normalized_host> exact_hosts(const model::rule& r, const std::string& rule_key,
                                              const error_sink& errors) {
  std::vector<net::normalized_host> out;
  for (std::size_t i = 0; i < r.hosts.size(); ++i) {
    if (errors.reported(indexed(rule_key + ".hosts", i)) || r.hosts[i].starts_with("*.")) continue;
    if (auto h = net::normalize_host(r.hosts[i])) out.push_back(std::move(*h));
  }
  return out;
}

// A secret with `hosts` goes nowhere else: an exact host of the rule outside them would send
// it (or refuse its placeholder) on every request there.
void check_bindings(context& c, const model::rule& r,
                    const std::vector<net::normalized_host>& hosts, const credential_sources& src,
                    const compiled_injection& out) {
  auto check = [&](std::size_t index, bool required) {
    const compiled_secret& s = src.secrets[index];
    if (s.hosts.empty()) return;
    for (const auto& h : hosts) {
      if (s.bound_to(h)) continue;
      c.error("inject",
              required
                  ? core::str_cat("rule '", r.name, "' requires the placeholder of secret '",
                                  s.name, "' on host '", h.text, "', which is not in secrets.",
                                  s.name, ".hosts (the placeholder is refused there)")
                  : core::str_cat("rule '", r.name, "' would send secret '", s.name, "' to host '",
                                  h.text, "', which is not in secrets.", s.name, ".hosts"));
      return;
    }
  };
  for (std::size_t index : out.secrets)
    check(index, false);
  for (std::size_t index : out.require)
    check(index, true);
}

void compile_injection(context& c, const model::rule& r, const std::string& rule_key,
                       const credential_sources& src, const error_sink& errors,
                       compiled_injection& out) {
  const model::inject& in = r.inject;
  if (!in.present || c.skip("inject")) return;
  out.active = true;
  if (!c.present("inject.headers") && !c.present("inject.query") && !c.present("inject.basic") &&
      !c.present("inject.require") && !c.broken("inject")) {
    c.error("inject", "inject needs headers, query, basic or require");
    return;
  }
  compile_headers(c, in, src, out);
  compile_query(c, in, src, out);
  compile_basic(c, in, src, out);
  compile_require(c, in, src, out);
  check_bindings(c, r, exact_hosts(r, rule_key, errors), src, out);
}

std::string known_redactors(std::span<const compiled_redactor> custom) {
  std::string out = "built-in: ";
  const auto builtin = builtin_redactor_names();
  for (std::size_t i = 0; i < builtin.size(); ++i)
    out += core::str_cat(i ? ", " : "", builtin[i]);
  out += "; custom: ";
  if (custom.empty()) out += "none";
  for (std::size_t i = 0; i < custom.size(); ++i)
    out += core::str_cat(i ? ", " : "", custom[i].name);
  return out;
}

void compile_redaction(context& c, const model::rule& r, const credential_sources& src,
                       compiled_redaction& out) {
  if (!r.redact.present || c.skip("redact")) return;
  out.active = true;
  out.max_bytes = r.redact.max_bytes.value_or(src.response_bytes);
  // The long form's names stand under redact.redactors, the short form's under redact.
  const std::string list_key = c.present("redact.redactors") ? "redact.redactors" : "redact";
  for (std::size_t i = 0; i < r.redact.redactors.size(); ++i) {
    const std::string k = indexed(list_key, i);
    if (c.skip(k)) continue;
    const std::string& name = r.redact.redactors[i];
    if (std::find(out.redactors.begin(), out.redactors.end(), name) != out.redactors.end()) {
      c.error(k, core::str_cat("duplicate redactor ", quoted_unless_secret(name, src.secrets)));
      continue;
    }
    const bool custom = std::any_of(src.redactors.begin(), src.redactors.end(),
                                    [&](const compiled_redactor& d) { return d.name == name; });
    if (!custom && !is_builtin_redactor(name)) {
      c.error(k, core::str_cat("unknown redactor ", quoted_unless_secret(name, src.secrets), " (",
                               known_redactors(src.redactors), ")"));
      continue;
    }
    out.redactors.push_back(name);
  }
}

}  // namespace

void compile_credentials(const model::rule& rule, const std::string& rule_key,
                         const credential_sources& sources, const mark_table& marks,
                         error_sink& errors, compiled_injection& inject,
                         compiled_redaction& redact) {
  context c(marks, errors, rule_key);
  compile_injection(c, rule, rule_key, sources, errors, inject);
  compile_redaction(c, rule, sources, redact);
  if (!rule.upgrades.empty() && (rule.inject.present || rule.redact.present) && !c.skip("upgrades"))
    c.error("upgrades",
            "a rule that injects or redacts cannot allow upgrades: an upgraded stream (e.g. a "
            "WebSocket) cannot be redacted; allow the upgrade in a rule of its own");
}

}  // namespace airlock::policy
