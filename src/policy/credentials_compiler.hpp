#pragma once
// Private to the policy component: a rule's `inject` and `redact` -> compiled_injection and
// compiled_redaction (credentials.hpp). Templates are split into literal text and secret
// indices; header names, secrets, placeholders, host bindings and redactor names are checked.
// Errors go to the sink under the offending key ("rules[2].inject.headers.Authorization"); no
// message quotes a template, a secret value or a placeholder (a secret may have been pasted
// into any of them).

#include "policy/credentials.hpp"
#include "policy/error_sink.hpp"
#include "policy/model.hpp"
#include "policy/secret_references.hpp"
#include "policy/secrets.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace airlock::policy {

// What a rule's credentials refer to: the policy's compiled secrets and custom redactors.
struct credential_sources {
  std::span<const compiled_secret> secrets;  // same order as model::policy::secrets
  std::span<const model::secret> secret_models;
  std::span<const compiled_redactor> redactors;  // custom ones; built-ins are known by name
  std::uint64_t response_bytes = 0;              // limits.response_bytes: default cut-off
};

// `rule_key` is "rules[i]". Errors reported (each under its key):
//   inject : empty (nothing to inject or require); a template that does not parse or names an
//            unknown secret, or whose literal text holds CR, LF or NUL (for headers and basic:
//            any control character but HTAB); a header name that is not an RFC 9110 token, is a
//            framing or hop-by-hop field (Host, Content-Length, Transfer-Encoding, Connection,
//            Keep-Alive, TE, Trailer, Upgrade, Proxy-*, Expect), or is listed twice
//            (case-insensitively); Authorization in headers together with basic; an empty or
//            duplicated query parameter name; basic without username or password, a ':' in
//            the username's literal text (RFC 7617 section 2); a require entry that is not a
//            declared secret with a placeholder, or is listed twice; a secret whose value a
//            header cannot carry (control characters) used in a header or basic, or a value
//            with ':' used in the username; a secret with `hosts` used or required on a rule
//            whose exact host it is not bound to.
//   redact : an unknown redactor (neither built-in nor custom) or a name listed twice.
//   upgrades together with inject or redact (an upgraded stream cannot be redacted).
void compile_credentials(const model::rule& rule, const std::string& rule_key,
                         const credential_sources& sources, const mark_table& marks,
                         error_sink& errors, compiled_injection& inject,
                         compiled_redaction& redact);

}  // namespace airlock::policy
