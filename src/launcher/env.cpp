#include "launcher/env.hpp"

#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::launcher {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// Substrings that mark a secret wherever they appear in a name.
constexpr std::string_view secret_parts[] = {
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "APIKEY",
    "API_KEY",
    "ACCESSKEY",
    "ACCESS_KEY",
    "PRIVATEKEY",
    "PRIVATE_KEY",
    "SECRETKEY",
    "AUTHKEY",
    "SESSIONKEY",
    "COOKIE",
    // A webhook URL is its own credential (Slack, Discord, Teams: whoever has it can post);
    // bearer tokens, JWTs and whole Authorization headers are credentials by name.
    "WEBHOOK",
    "BEARER",
    "AUTHORIZATION",
};

// JWT marks a secret too (JWT, AUTH_JWT, JWT_TOKEN), except as the first word of a setting
// that names how tokens are made or checked: JWT_ISSUER, JWT_ALGORITHM, JWT_AUDIENCE, ...
constexpr std::string_view jwt_settings[] = {
    "ISSUER", "ISS",        "AUDIENCE", "AUD", "ALGORITHM", "ALGORITHMS", "ALG",
    "EXPIRY", "EXPIRATION", "EXPIRES",  "TTL", "LEEWAY",    "HEADER"};

bool jwt_secret(std::string_view name) {
  const auto at = name.find("JWT");
  if (at == std::string_view::npos) return false;
  if (name.substr(at + 3).starts_with('_')) {
    const auto rest = name.substr(at + 4);
    for (auto s : jwt_settings) {
      if (rest == s || (rest.starts_with(s) && rest.substr(s.size()).starts_with('_')))
        return name.find("JWT", at + 3) != std::string_view::npos;
    }
  }
  return true;
}

// Prefixes of whole families of credentials.
constexpr std::string_view secret_prefixes[] = {
    "AWS_", "AZURE_", "ARM_CLIENT", "GOOGLE_APPLICATION_", "GCLOUD_", "VAULT_", "OP_SERVICE_",
};

// Names with a KEY-ish part that are known to carry no secret.
constexpr std::string_view safe_names[] = {
    "KEYTIMEOUT", "KEYMAP", "KEYTABLE", "XKB_DEFAULT_LAYOUT", "GPG_TTY", "PWD", "OLDPWD",
};

// Whole '_'-separated words of a name that mark a secret (so KEY matches API_KEY and
// KEY_FILE but not KEYBOARD or MONKEY).
constexpr std::string_view secret_words[] = {"KEY", "KEYS", "PASS", "PW", "PWD", "AUTH", "CREDS",
                                             "PRIVATE", "PAT", "SALT", "OTP", "SIGNATURE",
                                             // Sentry's DSN carries the project's key
                                             "DSN"};

bool has_secret_word(std::string_view name) {
  while (!name.empty()) {
    auto us = name.find('_');
    std::string_view word = name.substr(0, us);
    for (auto w : secret_words) {
      if (word == w) return true;
    }
    if (us == std::string_view::npos) break;
    name.remove_prefix(us + 1);
  }
  return false;
}

// scheme://user:password@host...: a URL that carries its own credentials.
bool url_with_password(std::string_view value) {
  auto scheme = value.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view rest = value.substr(scheme + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  auto at = authority.rfind('@');
  if (at == std::string_view::npos) return false;
  return authority.substr(0, at).find(':') != std::string_view::npos;
}

// RFC 7235's token68: the credentials of an Authorization value, one word.
bool is_token68(std::string_view s) {
  const auto body = s.substr(0, s.find_last_not_of('=') + 1);
  return !body.empty() && std::all_of(body.begin(), body.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
  });
}

// Basic credentials (RFC 7617): base64 of "user:password".
bool basic_credentials(std::string_view b64) {
  std::string decoded;
  unsigned bits = 0;
  int have = 0;
  for (char c : b64) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (c == '=') break;
    if (v < 0) return false;
    bits = (bits << 6) | static_cast<unsigned>(v);
    have += 6;
    if (have >= 8) {
      have -= 8;
      decoded.push_back(static_cast<char>((bits >> have) & 0xFF));
    }
  }
  return decoded.find(':') != std::string::npos;
}

// A value that is a credential whatever the variable's name: an Authorization header's value
// ("Bearer" and a token, "Basic" and base64 of user:password; not "Basic plan") or a JWT
// (RFC 7519: base64url "eyJ..." header, payload, signature).
bool credential_value(std::string_view value) {
  const std::string head = upper(value.substr(0, 7));
  if (head.starts_with("BEARER ")) return is_token68(value.substr(7));
  if (head.starts_with("BASIC ")) return basic_credentials(value.substr(6));
  if (!value.starts_with("eyJ")) return false;
  const auto is_b64url = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '=';
  };
  return std::all_of(value.begin(), value.end(), is_b64url) &&
         std::count(value.begin(), value.end(), '.') == 2;
}

std::string_view name_of(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

void set(std::vector<std::string>& env, std::string_view name, std::string_view value) {
  std::string entry = core::str_cat(name, '=', value);
  for (auto& e : env) {
    if (name_of(e) == name) {
      e = std::move(entry);
      return;
    }
  }
  env.push_back(std::move(entry));
}

}  // namespace

bool looks_secret(std::string_view name, std::string_view value) noexcept {
  try {
    const std::string n = upper(name);
    for (auto s : safe_names) {
      if (n == s) return false;
    }
    for (auto p : secret_parts) {
      if (n.find(p) != std::string::npos) return true;
    }
    for (auto p : secret_prefixes) {
      if (n.starts_with(p)) return true;
    }
    if (jwt_secret(n) || has_secret_word(n)) return true;
    return url_with_password(value) || credential_value(value);
  } catch (...) {
    return true;  // fail closed: a variable we cannot judge is dropped
  }
}

environment build_environment(std::span<const std::string> host,
                              std::span<const std::string> passed, std::uint16_t relay_port,
                              const trust_paths& trust) {
  environment out;
  auto explicitly_passed = [&](std::string_view name) {
    return std::any_of(passed.begin(), passed.end(),
                       [&](const std::string& p) { return name_of(p) == name; });
  };
  for (const auto& entry : host) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // malformed: never pass it on
    std::string_view name = std::string_view(entry).substr(0, eq);
    std::string_view value = std::string_view(entry).substr(eq + 1);
    if (looks_secret(name, value) && !explicitly_passed(name)) {
      out.dropped.emplace_back(name);
      continue;
    }
    set(out.entries, name, value);
  }

  // Every common spelling, so that no client library goes direct (which would only fail, but
  // slowly and confusingly). NO_PROXY is emptied: the relay is the only way out, even for
  // "localhost", which inside the jail has nothing but the relay.
  const std::string url = core::str_cat("http://127.0.0.1:", relay_port);
  for (std::string_view n :
       {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}) {
    set(out.entries, n, url);
  }
  set(out.entries, "NO_PROXY", "");
  set(out.entries, "no_proxy", "");
  // Node >= 22.21/24.5 honours the *_PROXY variables only when asked to.
  set(out.entries, "NODE_USE_ENV_PROXY", "1");

  // Each toolchain has its own idea of where trust lives; point all of them at the bundle.
  for (std::string_view n : {"SSL_CERT_FILE",
                             "REQUESTS_CA_BUNDLE",
                             "CURL_CA_BUNDLE",
                             "NODE_EXTRA_CA_CERTS",
                             "GIT_SSL_CAINFO",
                             "PIP_CERT",
                             "npm_config_cafile",
                             "NPM_CONFIG_CAFILE",
                             "CARGO_HTTP_CAINFO",
                             "DENO_CERT",
                             "BUNDLE_SSL_CA_CERT",
                             "AWS_CA_BUNDLE",
                             "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
                             "NIX_SSL_CERT_FILE",
                             "HTTPLIB2_CA_CERTS",
                             "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
                             "COMPOSER_CAFILE",
                             "HEX_CACERTS_PATH",
                             "YARN_CA_FILE_PATH",
                             "WEBSOCKET_CLIENT_CA_BUNDLE"}) {
    set(out.entries, n, trust.bundle);
  }
  set(out.entries, "SSL_CERT_DIR", trust.cert_dir);
  if (trust.java_store) {
    set(out.entries, "JAVA_TOOL_OPTIONS",
        core::str_cat("-Djavax.net.ssl.trustStore=", *trust.java_store,
                      " -Djavax.net.ssl.trustStoreType=JKS"
                      " -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=",
                      relay_port, " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=", relay_port));
  }
  // /tmp is the jail's own tmpfs; a host TMPDIR elsewhere would be read-only inside.
  set(out.entries, "TMPDIR", "/tmp");

  for (const auto& p : passed) {
    auto eq = p.find('=');
    if (eq != std::string::npos) {
      set(out.entries, std::string_view(p).substr(0, eq), std::string_view(p).substr(eq + 1));
      continue;
    }
    // "--env K": the host's value, if it has one.
    for (const auto& entry : host) {
      if (name_of(entry) == p && entry.size() > p.size()) {
        set(out.entries, p, std::string_view(entry).substr(p.size() + 1));
        break;
      }
    }
  }
  return out;
}

void remove_variables(environment& env, std::span<const std::string> names,
                      std::span<const std::string> passed) {
  for (const auto& n : names) {
    const bool by_caller = std::any_of(passed.begin(), passed.end(),
                                       [&](const std::string& p) { return name_of(p) == n; });
    if (by_caller) continue;
    if (std::erase_if(env.entries, [&](const std::string& e) { return name_of(e) == n; }) > 0 &&
        std::find(env.dropped.begin(), env.dropped.end(), n) == env.dropped.end())
      env.dropped.push_back(n);
  }
}

}  // namespace airlock::launcher
