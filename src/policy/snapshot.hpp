#pragma once
// The compiled, immutable policy. Built once per (re)load; every exchange holds a
// std::shared_ptr<const snapshot> taken at its start, so a reload never changes the rules
// under a request in flight.
//
// Thread safety: all const member functions may be called concurrently.

#include "core/errc.hpp"
#include "net/address_guard.hpp"
#include "net/host.hpp"
#include "net/peer_binary.hpp"
#include "policy/checks.hpp"
#include "policy/credentials.hpp"
#include "policy/mcp_compiler.hpp"
#include "policy/model.hpp"
#include "policy/secrets.hpp"

#include <boost/asio/ip/address.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace airlock::policy {

struct compiled_rule {
  std::string name;
  std::size_t index = 0;  // position in the file, stable within one snapshot
  model::mode mode = model::mode::enforce;
  bool inspect = false;
  // true when the rule constrains something only visible inside HTTP (methods, paths, ...),
  // so an opaque CONNECT tunnel cannot satisfy it.
  bool checks_requests = false;
  std::vector<model::port_range> ports;          // sorted and merged (ports.hpp)
  bool allows_http = true;                       // `schemes` lists http (or is absent)
  bool allows_https = true;                      // `schemes` lists https (or is absent)
  std::vector<boost::asio::ip::address> pinned;  // empty = resolve with DNS
  std::vector<net::cidr> allow_cidrs;
  std::vector<std::string> upgrades;
  std::vector<model::binary_ref> binaries;  // empty = any program (policy/binaries.hpp)
  compiled_checks checks;                   // query, headers, body
  compiled_mcp mcp;                         // MCP / JSON-RPC tool calls
  compiled_injection inject;
  compiled_redaction redact;
  const model::rule* source = nullptr;
  // Matching state (exact host set, suffixes, re2 objects, method set) is private to the
  // compiler; see snapshot::decide().
  struct matcher;
  std::shared_ptr<const matcher> match;
};

struct compiled_agent {
  std::string name;
  std::vector<const compiled_rule*> rules;
  std::string token_sha256;
  std::vector<net::cidr> sources;
};

// What the proxy is asked to decide about.
struct request_target {
  std::string_view method;  // "GET", "CONNECT", ...
  const net::normalized_host* host = nullptr;
  std::uint16_t port = 0;
  std::string_view path;     // without query; empty for CONNECT
  std::string_view upgrade;  // value of Upgrade header, lower-cased; empty if none
  // The program that made the request (launcher relay connections); null when unknown, which
  // no rule with `binaries` allows.
  const net::peer_binary* binary = nullptr;
  bool is_connect = false;  // opaque CONNECT (not an inner request of an inspected one)
  // How the request came (a rule's `schemes`): http for a plain request, https for a CONNECT
  // and for the requests inside an inspected TLS tunnel. Unset: https when is_connect, else
  // http, which is right for every request except those inside a tunnel: the proxy sets it
  // there (https inside TLS, http for plain HTTP a client sends through a tunnel).
  std::optional<model::scheme> scheme;
  model::scheme effective_scheme() const noexcept {
    return scheme.value_or(is_connect ? model::scheme::https : model::scheme::http);
  }
};

struct decision {
  core::errc reason = core::errc::host_denied;  // ok when allowed
  const compiled_rule* rule = nullptr;  // the rule that allowed, or came closest to allowing
  std::string detail;                   // "rule github: port 22 not allowed" (no secrets)
  // A denial under report mode: the request goes through, but is recorded as would-deny.
  bool report_only = false;
  bool allowed() const noexcept { return reason == core::errc::ok || report_only; }
};

struct identity {
  const compiled_agent* agent = nullptr;  // null when the client must (re)authenticate
  core::errc error = core::errc::ok;      // auth_required when agent is null
  std::string detail;
};

class snapshot {
 public:
  const model::policy& model() const noexcept { return model_; }
  const std::string& version() const noexcept { return model_.version; }
  const model::limits& limits() const noexcept { return model_.limits; }
  const net::address_guard& guard() const noexcept { return *guard_; }

  // In file order. Pointers into them stay valid as long as the snapshot lives.
  std::span<const compiled_rule> rules() const noexcept { return rules_; }
  std::span<const compiled_agent> agents() const noexcept { return agents_; }

  const compiled_agent* find_agent(std::string_view name) const noexcept;

  // The secrets, with the values read when this snapshot was loaded, in file order. Only the
  // proxy process loads a policy with secrets; nothing it prints may reveal() them.
  std::span<const compiled_secret> secrets() const noexcept { return secrets_; }
  const compiled_secret* find_secret(std::string_view name) const noexcept;
  // The custom redactors (`redactors:`), checked and ready for the redaction engine, in file
  // order. The built-in ones are not listed (see redactor_names.hpp).
  std::span<const compiled_redactor> redactors() const noexcept { return redactors_; }
  const compiled_redactor* find_redactor(std::string_view name) const noexcept;

  // Whether any rule has `binaries`, and whether one names `path` (bounded metric labels).
  bool names_binaries() const noexcept { return names_binaries_; }
  bool names_binary(std::string_view path) const noexcept;

  // Resolves the agent for a request: a Proxy-Authorization header value (Basic
  // base64(agent:token) or Bearer token), when present, must be valid (else auth_required);
  // otherwise the first agent whose `sources` contains the client address; otherwise the
  // agent named "default"; otherwise auth_required.
  identity identify(std::string_view proxy_authorization,
                    const boost::asio::ip::address& client) const;
  // The same, in the full order of trust: a connection from the launcher's relay is the agent
  // the relay names (relay_agent not empty; auth_required when the policy has no such agent),
  // whatever the request says; otherwise identify() above.
  identity identify(std::string_view relay_agent, std::string_view proxy_authorization,
                    const boost::asio::ip::address& client) const;

  // Matches the target against the agent's rules in order. The first rule that allows wins.
  // When none does, the most specific refusal among the rules whose host matched is returned
  // (binary > path > method > upgrade > needs_inspection > scheme > port), else host_denied.
  // binary_denied: the rule would allow the request, but not from this program (or from an
  // unknown one); a later rule may still allow it. A denial where
  // report mode applies (the closest rule's mode, else the policy's) has report_only set.
  // Allocation-free when the target is allowed.
  decision decide(const compiled_agent& agent, const request_target& target) const;

  ~snapshot();
  snapshot(const snapshot&) = delete;
  snapshot& operator=(const snapshot&) = delete;

 private:
  // Only the compiler builds snapshots (use load_file / load_string): a snapshot is either
  // complete or does not exist.
  friend struct compiler;
  explicit snapshot(model::policy m);
  model::policy model_;
  std::vector<compiled_rule> rules_;
  std::vector<compiled_agent> agents_;
  std::vector<compiled_secret> secrets_;
  std::vector<compiled_redactor> redactors_;
  std::unique_ptr<net::address_guard> guard_;
  bool names_binaries_ = false;
};

}  // namespace airlock::policy
