#pragma once
// The policy as plain data, exactly as the YAML file says it (after defaults are applied).
// Built by the loader, turned into an immutable snapshot by the compiler. No behaviour here.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace airlock::policy::model {

using std::chrono::milliseconds;

// Where a key stood in the file, for error messages found after parsing.
struct mark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

enum class mode { enforce, report };

struct listen {
  std::string proxy = "127.0.0.1:3128";  // host:port; port 0 picks a free port
  std::string admin = "127.0.0.1:9464";  // empty disables the admin server
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
};

struct agent {
  std::string name;
  std::vector<std::string> rules;    // rule names, in order of evaluation
  std::string token_sha256;          // lower-case hex of SHA-256(token); empty = none
  std::vector<std::string> sources;  // client source CIDRs that identify this agent
  mark at;
};

struct rule {
  std::string name;
  std::vector<std::string> hosts;        // exact names / IP literals, or "*.suffix"
  std::vector<std::string> host_regex;   // re2, full match against the normalised host
  std::vector<std::uint16_t> ports;      // default {80, 443}
  std::vector<std::string> methods;      // upper case; empty = any
  std::vector<std::string> paths;        // re2, full match against the path (no query)
  std::vector<std::string> upgrades;     // lower case protocol names allowed in Upgrade
  std::vector<std::string> addresses;    // pinned upstream addresses (skip DNS; still guarded)
  std::vector<std::string> allow_cidrs;  // per-rule address-guard exceptions
  bool inspect = false;                  // intercept TLS on CONNECT (needs tls.ca_*)
  std::optional<model::mode> mode;       // unset = the policy's mode
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
  std::vector<agent> agents;  // may include "default"
  std::vector<rule> rules;
};

}  // namespace airlock::policy::model
