#include "launcher/env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace airlock::launcher {
namespace {

std::map<std::string, std::string> as_map(const std::vector<std::string>& entries) {
  std::map<std::string, std::string> m;
  for (const auto& e : entries) {
    auto eq = e.find('=');
    EXPECT_EQ(m.count(e.substr(0, eq)), 0u) << "duplicate " << e;
    m[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return m;
}

const trust_paths trust{"/run/airlock/ca-bundle.crt", "/run/airlock/certs", std::nullopt};

TEST(LauncherEnv, SecretLookingNames) {
  for (auto name : {"GITHUB_TOKEN",
                    "gh_token",
                    "NPM_TOKEN",
                    "OPENAI_API_KEY",
                    "ANTHROPIC_API_KEY",
                    "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY",
                    "AWS_SESSION_TOKEN",
                    "AWS_PROFILE",
                    "DB_PASSWORD",
                    "MYSQL_PWD",
                    "PGPASSWORD",
                    "SMTP_PASS",
                    "CLIENT_SECRET",
                    "GOOGLE_APPLICATION_CREDENTIALS",
                    "DOCKER_CREDENTIALS",
                    "SSH_KEY",
                    "PRIVATE_KEY",
                    "GPG_PASSPHRASE",
                    "AZURE_CLIENT_ID",
                    "GITHUB_PAT",
                    "HF_TOKEN",
                    "SESSION_COOKIE",
                    "STRIPE_APIKEY",
                    "SSH_AUTH_SOCK",
                    "KEY",
                    "VAULT_ADDR",
                    "SLACK_WEBHOOK_URL",
                    "DISCORD_WEBHOOK",
                    "SENTRY_DSN",
                    "DSN",
                    "JWT",
                    "AUTH_JWT_KEY",
                    "MY_JWT",
                    "JWT_TOKEN",
                    "JWT_ISSUER_JWT",
                    "BEARER",
                    "UPSTREAM_BEARER",
                    "UPSTREAM_AUTHORIZATION"}) {
    EXPECT_TRUE(looks_secret(name, "x")) << name;
  }
  for (auto name : {"PATH", "HOME", "LANG", "TERM", "PWD", "OLDPWD", "LD_LIBRARY_PATH", "SHELL",
                    "KEYBOARD_LAYOUT", "MONKEY", "EDITOR", "PYTHONPATH", "USER", "KEYMAP",
                    "XDG_RUNTIME_DIR", "ODSNX", "GPSD_SNAP",
                    // settings of JWTs, not JWTs
                    "JWT_ISSUER", "AUTH0_JWT_AUDIENCE", "JWT_ALGORITHM", "JWT_EXPIRES_IN"}) {
    EXPECT_FALSE(looks_secret(name, "x")) << name;
  }
}

TEST(LauncherEnv, UrlWithPasswordIsSecret) {
  EXPECT_TRUE(looks_secret("DATABASE_URL", "postgres://u:hunter2@db:5432/x"));
  EXPECT_TRUE(looks_secret("X", "https://user:pw@host/path?q"));
  EXPECT_FALSE(looks_secret("X", "https://user@host/path"));
  EXPECT_FALSE(looks_secret("X", "https://host/a:b@c"));  // '@' after the authority
  EXPECT_FALSE(looks_secret("X", "plain:value@thing"));   // not a URL
}

// Credentials recognisable by their value, whatever the variable is called.
TEST(LauncherEnv, CredentialValuesAreSecret) {
  EXPECT_TRUE(looks_secret("X_HEADER", "Bearer abc.def"));
  EXPECT_TRUE(looks_secret("X_HEADER", "bearer abc"));
  EXPECT_TRUE(looks_secret("X_HEADER", "Basic dXNlcjpwdw=="));
  EXPECT_TRUE(looks_secret("SESSION", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"));
  EXPECT_FALSE(looks_secret("SESSION", "eyJhbGciOiJIUzI1NiJ9"));  // not three parts
  EXPECT_FALSE(looks_secret("GREETING", "Bearers of good news"));
  // The credential's shape, not the word: plain words after Basic or Bearer stay.
  EXPECT_FALSE(looks_secret("TIER", "Basic plan"));
  EXPECT_FALSE(looks_secret("TIER", "basic"));
  EXPECT_FALSE(looks_secret("MOTTO", "Bearer of good news"));
  EXPECT_TRUE(looks_secret("X_HEADER", "Basic dXNlcjpwYXNzd29yZA"));  // unpadded user:password
  EXPECT_FALSE(looks_secret("X", "a.b.c"));
}

TEST(LauncherEnv, ScrubsSecretsAndKeepsTheRest) {
  std::vector<std::string> host = {"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x",
                                   "HOME=/home/u",  "AWS_SECRET_ACCESS_KEY=abc",
                                   "LANG=C.UTF-8",  "DATABASE_URL=postgres://a:b@h/d",
                                   "=weird",        "NOEQUALS"};
  auto env = build_environment(host, {}, 3128, trust);
  auto m = as_map(env.entries);
  EXPECT_EQ(m["PATH"], "/usr/bin");
  EXPECT_EQ(m["HOME"], "/home/u");
  EXPECT_EQ(m["LANG"], "C.UTF-8");
  EXPECT_EQ(m.count("GITHUB_TOKEN"), 0u);
  EXPECT_EQ(m.count("AWS_SECRET_ACCESS_KEY"), 0u);
  EXPECT_EQ(m.count("DATABASE_URL"), 0u);
  EXPECT_EQ(m.count(""), 0u);
  EXPECT_EQ(m.count("NOEQUALS"), 0u);
  std::vector<std::string> dropped = env.dropped;
  std::sort(dropped.begin(), dropped.end());
  EXPECT_EQ(dropped,
            (std::vector<std::string>{"AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "GITHUB_TOKEN"}));
}

TEST(LauncherEnv, ProxyAndTrustVariables) {
  std::vector<std::string> host = {"HTTP_PROXY=http://evil:1", "no_proxy=*", "NO_PROXY=internal",
                                   "SSL_CERT_FILE=/etc/other.pem"};
  auto m = as_map(build_environment(host, {}, 4000, trust).entries);
  for (auto n :
       {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"})
    EXPECT_EQ(m[n], "http://127.0.0.1:4000") << n;
  EXPECT_EQ(m.at("NO_PROXY"), "");
  EXPECT_EQ(m.at("no_proxy"), "");
  EXPECT_EQ(m["NODE_USE_ENV_PROXY"], "1");
  for (auto n : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                 "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile", "CARGO_HTTP_CAINFO",
                 "DENO_CERT", "BUNDLE_SSL_CA_CERT"})
    EXPECT_EQ(m[n], "/run/airlock/ca-bundle.crt") << n;
  EXPECT_EQ(m["SSL_CERT_DIR"], "/run/airlock/certs");
  EXPECT_EQ(m["TMPDIR"], "/tmp");
  EXPECT_EQ(m.count("JAVA_TOOL_OPTIONS"), 0u);
}

TEST(LauncherEnv, JavaStoreWhenMade) {
  trust_paths t = trust;
  t.java_store = "/run/airlock/truststore.p12";
  auto m = as_map(build_environment({}, {}, 3128, t).entries);
  EXPECT_NE(m["JAVA_TOOL_OPTIONS"].find("-Djavax.net.ssl.trustStore=/run/airlock/truststore.p12"),
            std::string::npos);
  EXPECT_NE(m["JAVA_TOOL_OPTIONS"].find("-Dhttps.proxyPort=3128"), std::string::npos);
}

TEST(LauncherEnv, ExplicitEnvWins) {
  std::vector<std::string> host = {"GITHUB_TOKEN=ghp_x", "OTHER_TOKEN=y"};
  std::vector<std::string> passed = {"GITHUB_TOKEN", "NEW=1=2", "HTTPS_PROXY=http://x:1",
                                     "MISSING"};
  auto env = build_environment(host, passed, 3128, trust);
  auto m = as_map(env.entries);
  EXPECT_EQ(m["GITHUB_TOKEN"], "ghp_x");  // passed by name: the host's value
  EXPECT_EQ(m.count("OTHER_TOKEN"), 0u);
  EXPECT_EQ(m["NEW"], "1=2");
  EXPECT_EQ(m["HTTPS_PROXY"], "http://x:1");
  EXPECT_EQ(m.count("MISSING"), 0u);
  EXPECT_EQ(std::count(env.dropped.begin(), env.dropped.end(), "GITHUB_TOKEN"), 0);
}

}  // namespace
}  // namespace airlock::launcher
