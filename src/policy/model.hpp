#pragma once
// The policy as plain data, exactly as the YAML file says it (after defaults are applied).
// Built by the loader, turned into an immutable snapshot by the compiler. No behaviour here.

#include "policy/approvals.hpp"
#include "policy/dlp.hpp"
#include "policy/mcp.hpp"
#include "policy/model_basics.hpp"
#include "policy/state.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace airlock::policy::model {

using std::chrono::milliseconds;

enum class mode { enforce, report };

// Ports a rule allows: one port ({443, 443}) or an inclusive range (`8000-8999`).
struct port_range {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  bool contains(std::uint16_t port) const noexcept { return first <= port && port <= last; }
  bool operator==(const port_range&) const = default;
  // "443" or "8000-8999", as the policy file spells it. A conversion so that core::str_cat
  // (and so every message and fingerprint that prints ports) takes a range like a number.
  operator std::string() const {
    return first == last ? std::to_string(first)
                         : std::to_string(first) + "-" + std::to_string(last);
  }
};

// How a request reached the proxy (`rules[i].schemes`): `http` is a plain HTTP request (an
// absolute-form http:// URL), `https` a CONNECT tunnel and the requests inside it.
enum class scheme : std::uint8_t { http = 1, https = 2 };

struct listen {
  std::string proxy = "127.0.0.1:3128";  // host:port; port 0 picks a free port
  // Where launcher relays connect: each connection starts with a PROXY protocol v2 header
  // whose agent TLV names the agent. A Unix socket path (only the launcher's user or group
  // may connect) or host:port; empty = no relay listener.
  std::string relay;
  std::string relay_group;  // group that may connect to a Unix relay socket (mode 0660)
  std::string admin = "127.0.0.1:9464";  // empty disables the admin server
  // Host names (lowercase) a request to the admin port may give in its Host field, besides IP
  // literals and localhost (telemetry/admin_gate.hpp): the defence against DNS rebinding.
  std::vector<std::string> admin_hosts;
};

struct tls {
  std::string ca_cert;      // PEM; relative paths resolve against the policy file's folder
  std::string ca_key;       // PEM, must match ca_cert
  std::string upstream_ca;  // PEM bundle to verify upstreams; empty = system trust store
};

struct limits {
  std::uint64_t header_bytes = 64 * 1024;  // request line + headers
  std::uint32_t header_count = 100;
  milliseconds head_timeout{10'000};          // time to receive a whole request head
  std::uint64_t body_bytes = 10ull << 20;     // request body (413 above)
  std::uint64_t response_bytes = 1ull << 30;  // response body (cut off above)
  milliseconds connect_timeout{5'000};
  milliseconds dns_timeout{5'000};
  milliseconds idle_timeout{60'000};                 // no bytes either way on a connection/tunnel
  milliseconds response_timeout{60'000};             // upstream response head after request sent
  milliseconds drain_timeout{10'000};                // graceful shutdown
  std::uint32_t max_connections = 10'000;            // client connections, whole proxy
  std::uint32_t max_connections_per_client = 1'000;  // per client source address
};

struct network {
  bool block_private = true;             // refuse special-purpose addresses
  std::vector<std::string> allow_cidrs;  // exceptions, e.g. "10.1.2.0/24"
};

struct audit {
  std::string path = "-";  // "-" = stdout, "off" = disabled, else a file (appended)
  // `format`: "json" (one JSON object per line, docs/operations.md) or "ocsf" (OCSF 1.1.0
  // events, one per line: telemetry/ocsf_format.hpp). The format replaces, not adds.
  bool ocsf = false;
  // `on_failure`: while the log cannot be written (a full disk), "deny" refuses new requests
  // (audit_unavailable) and makes /readyz 503; "continue" serves them and their records wait in
  // memory (up to 16 MiB, then they are dropped and counted). Read per exchange: a reload applies.
  bool deny_on_failure = true;
};

// Stops a runaway agent: more than `max_failures` refusals or upstream errors within `window`
// suspends it for `cooldown`. Off when max_failures is 0.
struct breaker {
  std::uint32_t max_failures = 0;
  milliseconds window{60'000};
  milliseconds cooldown{300'000};
};

// Query parameters (after percent-decoding; '+' is a space, as in HTML forms).
enum class unknown_params { refuse, strip, allow };
struct query_checks {
  bool present = false;  // the rule has a `query` key
  // name -> re2 pattern every value of that parameter must match in full ("" = any value)
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<std::string> required;
  unknown_params unknown = unknown_params::refuse;
};

// Request headers; names are matched case-insensitively.
struct header_checks {
  std::vector<std::string> required;
  std::vector<std::string> forbidden;
  // name -> re2 pattern every value of that header must match in full, when it is present
  std::vector<std::pair<std::string, std::string>> patterns;
};

struct body_checks {
  std::optional<std::uint64_t> max_bytes;  // this rule's request body limit (413 above)
  bool json = false;                       // the body must be a JSON document
  std::vector<json_field> fields;          // in file order
};

// Credentials the proxy adds to requests under a rule (`rules[i].inject`). Every value is a
// template: literal text and ${secrets.NAME} references, expanded per request.
struct inject {
  bool present = false;  // the rule has an `inject` key
  // header name (as written) -> template; the agent's own fields of that name are removed
  std::vector<std::pair<std::string, std::string>> headers;
  // query parameter name -> template; the agent's own parameters of that name are removed
  std::vector<std::pair<std::string, std::string>> query;
  // HTTP Basic credentials (RFC 7617): Authorization: Basic base64(username ":" password)
  bool has_basic = false;
  std::string basic_username;  // template
  std::string basic_password;  // template
  // Secrets whose placeholder every request must carry (in a header or the target).
  std::vector<std::string> require;
};

// Response redaction under a rule (`rules[i].redact`): a list of redactor names, or
// {redactors: [...], max_bytes: N}.
struct redact {
  bool present = false;
  std::vector<std::string> redactors;      // built-in or `redactors:` names
  std::optional<std::uint64_t> max_bytes;  // text body cut off (with a marker) above this
};

struct agent {
  std::string name;
  std::vector<std::string> rules;    // rule names, in order of evaluation
  std::string token_sha256;          // lower-case hex of SHA-256(token); empty = none
  std::vector<std::string> sources;  // client source CIDRs that identify this agent
  model::rate rate;
  model::breaker breaker;
  std::string source;  // as for rule::source (it holds the token's hash: never logged)
  mark at;
};

// A program a rule allows (`rules[i].binaries`, policy/binaries.hpp): its path inside the jail,
// and optionally the lower-case hex SHA-256 of its executable.
struct binary_ref {
  std::string path;
  std::string sha256;  // empty = any content at that path
  mark at;
};

// The protocols a rule carries (`rules[i].protocols`), as bits: HTTP/1.1 requests, HTTP/2
// streams (an inspected tunnel offers "h2" in ALPN only when the rule has it), WebSocket.
inline constexpr std::uint8_t protocol_http1 = 1;
inline constexpr std::uint8_t protocol_h2 = 2;
inline constexpr std::uint8_t protocol_websocket = 4;

// WebSocket messages on a rule (`websocket:`): each message is held whole (up to
// max_message_bytes, after inflating) and checked before it is forwarded.
struct websocket_limits {
  std::uint64_t max_message_bytes = 1024 * 1024;  // larger: close 1009
  std::uint64_t messages_per_minute = 0;          // from the agent, per connection; 0 = no limit
  std::uint64_t burst = 0;                        // 0 = messages_per_minute
};

struct rule {
  std::string name;
  std::vector<std::string> hosts;        // exact names / IP literals, or "*.suffix"
  std::vector<std::string> host_regex;   // re2, full match against the normalised host
  std::vector<port_range> ports;         // default {80, 443}; sorted, merged when compiled
  std::vector<model::scheme> schemes;    // empty = both
  std::vector<std::string> methods;      // upper case; empty = any
  std::vector<std::string> paths;        // re2, full match against the path (no query)
  std::vector<std::string> upgrades;     // lower case protocol names allowed in Upgrade
  std::uint8_t protocols = 0x7;          // protocol_* bits; default all
  std::vector<std::string> addresses;    // pinned upstream addresses (skip DNS; still guarded)
  std::vector<std::string> allow_cidrs;  // per-rule address-guard exceptions
  bool inspect = false;                  // intercept TLS on CONNECT (needs tls.ca_*)
  std::optional<model::mode> mode;       // unset = the policy's mode
  model::rate rate;                      // per agent on this rule
  query_checks query;
  header_checks headers;
  body_checks body;
  model::inject inject;
  model::redact redact;
  // Programs whose requests the rule allows (launcher relay connections); empty = any, and
  // connections with no known program too.
  std::vector<binary_ref> binaries;
  dlp_config dlp;  // unset (present = false): the policy-wide `dlp`
  mcp_config mcp;  // MCP / JSON-RPC tool calls (mcp.hpp)
  websocket_limits websocket;
  model::ask ask;  // hold the requests it allows for an operator (policy/approvals.hpp)
  // The rule as written, emitted again (comments and layout gone): what a reload compares to
  // say which rules it modified, whatever key changed. Never logged: it may name secrets.
  std::string source;
  mark at;
};

// A named secret (`secrets.NAME`): where its value is read from when the policy loads. The value
// itself is never part of the model; the snapshot holds it (snapshot::secrets()).
struct secret {
  std::string name;
  std::string env;   // environment variable that holds the value, or
  std::string file;  // file that holds it (relative paths resolve against the policy's folder)
  // A fake value of the same shape that the launcher may hand the agent; the proxy swaps it for
  // the value on `hosts` only. Empty = none (see has_placeholder).
  std::string placeholder;
  bool has_placeholder = false;
  std::vector<std::string> hosts;  // where the secret may go: exact names / IPs or "*.suffix"
  // Where on those hosts the placeholder is swapped (`header`, `header:NAME`, `query`,
  // `query:NAME`, `path`, `anywhere`), as written; see has_swap_in.
  std::vector<std::string> swap_in;
  bool has_swap_in = false;
  mark at;
};

// A custom redactor (`redactors[i]`), as written.
struct redactor {
  std::string name;
  std::string pattern;  // re2
  std::string replace;  // empty = "[REDACTED:<name>]"
  bool has_replace = false;
  mark at;
};

struct policy {
  std::string source;   // file name the policy came from
  std::string version;  // hex SHA-256 of the file's bytes
  model::mode mode = model::mode::enforce;
  model::listen listen;
  model::tls tls;
  model::limits limits;
  model::network network;
  model::audit audit;
  model::state_store state;         // policy/state.hpp
  std::vector<secret> secrets;      // in file order
  std::vector<redactor> redactors;  // in file order
  std::vector<agent> agents;        // may include "default"
  std::vector<rule> rules;
  dlp_config dlp;                         // policy-wide default for rules without `dlp`
  std::vector<blocked_host> blocklist;    // hosts no rule reaches (open-web mode)
  model::approvals approvals;             // held requests (policy/approvals.hpp)
  std::vector<operator_token> operators;  // the admin port's operators (policy/approvals.hpp)
  // Other files whose `rules` and agents' rule lists are added to this policy (`include:`),
  // resolved against the policy file's folder; read by the loader (include_parser.hpp).
  std::vector<std::string> includes;
};

}  // namespace airlock::policy::model
