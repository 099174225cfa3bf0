#pragma once
// A rule's credential injection (`inject`) and response redaction (`redact`), compiled once
// per policy load. Templates are split into literal text and references to the snapshot's
// secrets (by index into snapshot::secrets()), so a request expands them without parsing and a
// reload that rotates a secret changes nothing here but the value the index points to.
//
// The redaction engine itself is built by the proxy at activation (src/filters/redaction;
// policy does not depend on filters): this only names the redactors.
//
// Thread safety: immutable once the snapshot is built.

#include "policy/secrets.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy {

// "Bearer ${secrets.github}" as [{"Bearer ", 0}]; "a${secrets.x}b" as [{"a", x}, {"b", none}];
// a template without references as one part without a secret.
struct secret_template {
  static constexpr std::size_t no_secret = std::numeric_limits<std::size_t>::max();
  struct part {
    std::string text;                // literal text (may be empty)
    std::size_t secret = no_secret;  // index into snapshot::secrets(), after the text
  };
  std::vector<part> parts;

  // The text with every reference replaced by the secret's value. The result holds secret
  // values: send it upstream, never print it.
  std::string expand(std::span<const compiled_secret> secrets) const;
  bool uses_secrets() const noexcept;
};

struct compiled_injection {
  bool active = false;  // the rule injects or requires something
  // Header name (as written) -> value. Never a framing or hop-by-hop header (the loader
  // refuses Host, Content-Length, Transfer-Encoding, Connection, Proxy-*, ...).
  std::vector<std::pair<std::string, secret_template>> headers;
  // Query parameter (decoded name) -> value, appended percent-encoded.
  std::vector<std::pair<std::string, secret_template>> query;
  bool has_basic = false;
  secret_template basic_username;
  secret_template basic_password;
  // Indices of secrets whose placeholder each request must carry; each has a placeholder.
  std::vector<std::size_t> require;
  // Every secret the templates use (each once), for the host binding check: a secret with
  // `hosts` is injected only on those hosts.
  std::vector<std::size_t> secrets;
};

struct compiled_redaction {
  bool active = false;                 // the rule has a `redact` key
  std::vector<std::string> redactors;  // built-in or custom names, in the order written
  // A text body longer than this (decoded) is cut off with a marker. From `max_bytes`, else
  // limits.response_bytes.
  std::uint64_t max_bytes = 0;
};

}  // namespace airlock::policy
