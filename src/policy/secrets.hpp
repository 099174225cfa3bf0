#pragma once
// Secrets and custom redactors as a compiled policy holds them (snapshot::secrets(),
// snapshot::redactors()).
//
// Secret values are read when the policy loads (from the environment or a file) and live only
// in the snapshot, as secret_value; a reload reads them again, which is how a rotated secret is
// picked up. Nothing here prints a value: names, sources (variable names, paths) and lengths
// only.
//
// Redactors are kept as engine-ready specs (name, RE2 pattern, resolved replacement): the policy
// has checked that each pattern compiles the way the redaction engine compiles it (Latin-1, no
// empty match, at most the one named group `redact`); src/filters/redaction builds the engines
// (policy does not depend on filters).
//
// Thread safety: immutable once the snapshot is built.

#include "net/host.hpp"
#include "policy/secret_value.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::policy {

// Bounds on a secret value, in bytes (after a trailing line break is removed). The lower bound
// keeps redaction sane: every injected secret is redacted from responses, and a short value
// would be cut out of unrelated text (and would be guessable anyway). The upper bound is the
// redaction engine's (engine_options::max_secret_length).
inline constexpr std::size_t min_secret_bytes = 8;
inline constexpr std::size_t max_secret_bytes = 16 * 1024;

enum class secret_source { env, file };

struct compiled_secret {
  std::string name;
  secret_source source = secret_source::env;
  std::string origin;  // the environment variable's name or the file's path (not secret)
  secret_value value;
  std::string placeholder;  // empty = none
  // Where the secret may be used (exact names / IP literals, "*.suffix"), normalised. Empty =
  // not bound: no placeholder, and injection limited only by the rule's own hosts.
  std::vector<std::string> hosts;

  // Whether `host` is one of `hosts` (a wildcard matches names under its suffix, never the
  // suffix itself nor an IP literal). False when hosts is empty.
  bool bound_to(const net::normalized_host& host) const noexcept;
};

struct compiled_redactor {
  std::string name;
  std::string pattern;      // RE2 syntax, to be compiled with Latin-1 encoding
  std::string replacement;  // as given, or "[REDACTED:<name>]"
  // The pattern has the group (?P<redact>...): only that part of a match is replaced (the
  // engine replaces group 1 when a pattern has one).
  bool partial = false;
};

}  // namespace airlock::policy
