// The policy's `state:` section (policy/state.hpp): defaults, both backends, every key's
// checks, and the password's secret reference.
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace airlock::policy {
namespace {

using model::state_backend;
using model::state_fallback;

std::string all_errors(const load_result& r) {
  std::string out;
  for (const auto& e : r.errors)
    out += e.to_string() + "\n";
  return out;
}

// The one error of a policy that must not load.
load_error only_error(std::string_view yaml) {
  auto r = load_string(yaml, "p.yaml");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.errors.size(), 1u) << all_errors(r);
  return r.errors.empty() ? load_error{} : r.errors[0];
}

TEST(PolicyState, DefaultIsLocal) {
  auto p = test::must_load("mode: enforce\n");
  ASSERT_TRUE(p);
  const auto& s = p->model().state;
  EXPECT_EQ(s.backend, state_backend::local);
  EXPECT_FALSE(s.shared());
  EXPECT_EQ(s.key_prefix, "airlock:");
  EXPECT_EQ(s.on_unavailable, state_fallback::local);
  EXPECT_EQ(s.replicas, 1u);
}

TEST(PolicyState, ScalarNamesTheBackend) {
  auto p = test::must_load("state: local\n");
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->model().state.shared());
  const auto e = only_error("state: redis\n");
  EXPECT_EQ(e.key, "state");
  EXPECT_NE(e.message.find("needs an address"), std::string::npos) << e.message;
}

TEST(PolicyState, RedisOverTcpWithEveryKey) {
  ::setenv("AIRLOCK_TEST_REDIS_PW", "redis-password-1", 1);
  auto p = test::must_load(
      "secrets:\n  redis: {env: AIRLOCK_TEST_REDIS_PW}\n"
      "state:\n  backend: redis\n  address: 127.0.0.1:6380\n  username: airlock\n"
      "  password_secret: redis\n  key_prefix: 'fleet-a:'\n  timeout_ms: 80\n"
      "  on_unavailable: deny\n  replicas: 3\n");
  ASSERT_TRUE(p);
  const auto& s = p->model().state;
  EXPECT_TRUE(s.shared());
  EXPECT_EQ(s.host, "127.0.0.1");
  EXPECT_EQ(s.port, 6380);
  EXPECT_TRUE(s.unix_path.empty());
  EXPECT_EQ(s.username, "airlock");
  EXPECT_EQ(s.password_secret, "redis");
  EXPECT_EQ(s.key_prefix, "fleet-a:");
  EXPECT_EQ(s.timeout.count(), 80);
  EXPECT_EQ(s.on_unavailable, state_fallback::deny);
  EXPECT_EQ(s.replicas, 3u);
}

TEST(PolicyState, UnixSocketPathResolvesAgainstThePolicyFolder) {
  auto r = load_string("state: {backend: redis, address: run/redis.sock}\n", "/etc/airlock/p.yaml");
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r.policy->model().state.unix_path, "/etc/airlock/run/redis.sock");
  EXPECT_EQ(r.policy->model().state.port, 0);
}

TEST(PolicyState, BadValuesPointAtTheirKey) {
  EXPECT_EQ(only_error("state: {backend: memcached}\n").key, "state.backend");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'no port'}\n").key, "state.address");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', timeout_ms: 0}\n").key,
            "state.timeout_ms");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', replicas: -1}\n").key,
            "state.replicas");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', on_unavailable: open}\n").key,
            "state.on_unavailable");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', key_prefix: 'a b'}\n").key,
            "state.key_prefix");
  const auto typo = only_error("state: {backend: redis, address: 'h:1', replica: 2}\n");
  EXPECT_EQ(typo.key, "state.replica");
  EXPECT_NE(typo.message.find("did you mean 'replicas'"), std::string::npos) << typo.message;
}

TEST(PolicyState, TlsWithItsFilesRelativeToThePolicy) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("airlock-state-tls-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "tls");
  for (const char* f : {"ca.pem", "client.pem", "client.key"})
    std::ofstream(dir / "tls" / f) << "x\n";
  auto r = load_string(
      "state:\n  backend: redis\n  address: 10.0.0.5:6380\n"
      "  tls: {ca: tls/ca.pem, server_name: redis.internal, cert: tls/client.pem, "
      "key: tls/client.key}\n",
      (dir / "p.yaml").string());
  ASSERT_TRUE(r.ok()) << all_errors(r);
  const auto& t = r.policy->model().state.tls;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.ca, (dir / "tls/ca.pem").string());
  EXPECT_EQ(t.server_name, "redis.internal");
  EXPECT_EQ(t.cert, (dir / "tls/client.pem").string());
  EXPECT_EQ(t.key, (dir / "tls/client.key").string());
  // A CA file that cannot be read is the policy's error, at its key.
  const auto missing =
      load_string("state: {backend: redis, address: 'h:1', tls: {ca: tls/none.pem}}\n",
                  (dir / "p.yaml").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.errors.at(0).key, "state.tls.ca") << all_errors(missing);
  std::filesystem::remove_all(dir);
}

TEST(PolicyState, TlsTrueUsesTheSystemTrustStore) {
  auto p = test::must_load("state: {backend: redis, address: 'redis.internal:6380', tls: true}\n");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->model().state.tls.enabled);
  EXPECT_TRUE(p->model().state.tls.ca.empty());
}

TEST(PolicyState, TlsMistakesPointAtTheirKey) {
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', tls: yes}\n").key, "state.tls");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', tls: {cafile: x}}\n").key,
            "state.tls.cafile");
  EXPECT_EQ(only_error("state: {backend: redis, address: 'h:1', tls: {cert: /etc/passwd}}\n").key,
            "state.tls");  // cert without key
  EXPECT_EQ(only_error("state: {backend: redis, address: /run/r.sock, tls: true}\n").key,
            "state.tls");
}

TEST(PolicyState, PasswordSecretMustExist) {
  const auto e = only_error("state: {backend: redis, address: 'h:1', password_secret: nope}\n");
  EXPECT_EQ(e.key, "state.password_secret");
  EXPECT_EQ(e.line, 1);
  EXPECT_NE(e.message.find("names no entry of secrets"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("nope"), std::string::npos) << e.message;  // might be a password
}

}  // namespace
}  // namespace airlock::policy
