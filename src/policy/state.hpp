#pragma once
// The policy's `state:` section: where the limits, breakers and kill switch that replicas share
// are kept. `local` (the default) keeps them in this process, as before; `redis` keeps them in
// one Redis (or Valkey) server that every replica of the fleet uses. Kept out of model.hpp so
// that the section has one home (parser: state_parser.cpp; docs: docs/policy.md "state").

#include <chrono>
#include <cstdint>
#include <string>

namespace airlock::policy::model {

enum class state_backend : std::uint8_t { local, redis };

// What a replica does while the store cannot be reached.
enum class state_fallback : std::uint8_t {
  local,  // per-replica limits, each scaled down by `replicas` (the fleet stays near its limit)
  deny,   // every request of a limited agent is refused (store_unavailable)
};

// `state.tls`: TLS to the store (RFC 8446), the server's certificate verified.
struct state_tls {
  bool enabled = false;
  std::string ca;           // PEM bundle the server's certificate must chain to; empty: system
  std::string server_name;  // the name (or IP) the certificate must carry; empty: the host
  std::string cert;         // client certificate chain (PEM), for Redis's tls-auth-clients
  std::string key;          // its private key (PEM); cert and key go together
};

struct state_store {
  state_backend backend = state_backend::local;
  // `address`: host:port (an IP literal or a name resolved at connect time) or a Unix socket
  // path (anything with a '/'; relative paths resolve against the policy file's folder).
  std::string address;
  std::string host;  // from address, when TCP
  std::uint16_t port = 0;
  std::string unix_path;        // from address, when a Unix socket
  state_tls tls;                // TCP only
  std::string username;         // Redis 6 ACL user (AUTH username password); empty = default user
  std::string password_secret;  // the name of a `secrets:` entry holding the password
  std::string key_prefix = "airlock:";
  std::chrono::milliseconds timeout{250};  // timeout_ms: connect and every command
  state_fallback on_unavailable = state_fallback::local;
  std::uint32_t replicas = 1;  // for on_unavailable: local (each replica takes 1/replicas)

  bool shared() const noexcept { return backend == state_backend::redis; }
};

}  // namespace airlock::policy::model
