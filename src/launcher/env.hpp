#pragma once
// The environment the confined command sees: the host's, minus anything that looks like a
// secret, plus the proxy and trust variables, plus what --env asked for. Pure functions.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::launcher {

// True when a variable's name (or a URL value with a password in it) suggests a credential:
// *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *PASSPHRASE*, *CREDENTIAL*, *_KEY / KEY_* / *APIKEY*
// and other key-like names, AWS_*, AZURE_*, names the proxy's secrets use, and values like
// scheme://user:password@host. Matching is case-insensitive.
bool looks_secret(std::string_view name, std::string_view value) noexcept;

// Where the trust material is visible inside the jail.
struct trust_paths {
  std::string bundle;                     // the PEM bundle (system + Airlock CA)
  std::string cert_dir;                   // a directory holding the bundle (SSL_CERT_DIR)
  std::optional<std::string> java_store;  // a JKS trust store (--java-truststore)
};

struct environment {
  std::vector<std::string> entries;  // "K=V", what execve gets
  std::vector<std::string> dropped;  // names removed as secret-looking (for --verbose)
};

// host: "K=V" strings (environ). passed: --env values ("K=V" sets, "K" passes the host's K
// unscrubbed). The proxy URL is http://127.0.0.1:relay_port for HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY in both cases; NO_PROXY/no_proxy are empty, so nothing bypasses the relay. --env
// wins over everything else (it is the caller's explicit word).
environment build_environment(std::span<const std::string> host,
                              std::span<const std::string> passed, std::uint16_t relay_port,
                              const trust_paths& trust);

// Removes each variable in names from env (recording it in env.dropped) unless --env (passed)
// names it: the variables a --policy reads its secrets from, whatever their names look like.
void remove_variables(environment& env, std::span<const std::string> names,
                      std::span<const std::string> passed);

}  // namespace airlock::launcher
