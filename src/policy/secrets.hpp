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

// Where on its hosts a secret's placeholder is swapped for the value (`secrets.NAME.swap_in`):
// only where a credential goes, so that the agent cannot have the proxy write the value into a
// field the host stores, forwards or publishes (a webhook URL, a chat message, a file name).
// A placeholder found on those hosts anywhere else is refused (placeholder_misplaced).
// Default: `[header, query]`.
struct swap_places {
  // `anywhere`: every occurrence in the request target and in every header value (the
  // behaviour before swap_in existed).
  bool anywhere = false;
  // `path`: anywhere in the path (an API that takes the key there: Telegram's /bot<token>/).
  bool path = false;
  // `header`: any header whose whole value is the placeholder, or one auth-scheme token, spaces
  // and the placeholder (RFC 9110 section 11.4: "Bearer <placeholder>").
  bool any_header = true;
  // `query`: any query parameter whose whole value (raw or decoded) is the placeholder.
  bool any_query = true;
  std::vector<std::string> headers;  // `header:NAME`: only these (lower case), same forms
  std::vector<std::string> params;   // `query:NAME`: only these (the decoded name, exactly)

  bool header_allowed(std::string_view name) const noexcept;  // name in any case
  bool param_allowed(std::string_view decoded_name) const noexcept;
};

// Adds one entry of swap_in to `out` (which starts empty: swap_places{} minus its defaults);
// the problem with the entry, "" when none. Never quotes the entry (it may be a pasted value).
std::string add_swap_place(std::string_view entry, swap_places& out);

struct compiled_secret {
  std::string name;
  secret_source source = secret_source::env;
  std::string origin;  // the environment variable's name or the file's path (not secret)
  secret_value value;
  std::string placeholder;  // empty = none
  // Where the secret may be used (exact names / IP literals, "*.suffix"), normalised. Empty =
  // not bound: no placeholder, and injection limited only by the rule's own hosts.
  std::vector<std::string> hosts;
  swap_places swap_in;  // where on `hosts` the placeholder becomes the value

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
