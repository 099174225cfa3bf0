// The policy's `state:` section (policy/state.hpp): defaults, both backends, every key's
// checks, and the password's secret reference.
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

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

TEST(PolicyState, TlsIsRefusedNotIgnored) {
  // Fail closed: an operator who asks for TLS must not get plain text.
  const auto e = only_error("state: {backend: redis, address: 'h:1', tls: true}\n");
  EXPECT_EQ(e.key, "state.tls");
  EXPECT_NE(e.message.find("no TLS"), std::string::npos) << e.message;
}

TEST(PolicyState, PasswordSecretMustExist) {
  const auto e = only_error("state: {backend: redis, address: 'h:1', password_secret: nope}\n");
  EXPECT_EQ(e.key, "state.password_secret");
  EXPECT_EQ(e.line, 1);
  EXPECT_NE(e.message.find("no secret named 'nope'"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace airlock::policy
