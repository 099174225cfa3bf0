// What a reload reports beyond the rules and agents: listen.* changes, which need a restart, and
// the files the policy names, which are watched (file_watches::files_of).

#include "proxy/policy_diff.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"
#include "proxy/file_watches.hpp"

#include <gtest/gtest.h>

namespace airlock::proxy {
namespace {

TEST(ListenChanges, NoneWhenTheSame) {
  policy::model::listen bound;
  EXPECT_EQ(listen_changes(bound, bound, false, false), "");
}

TEST(ListenChanges, EachChangedAddressNamed) {
  policy::model::listen bound, next;
  next.proxy = "0.0.0.0:3128";
  next.relay = "/run/airlock/relay.sock";
  EXPECT_EQ(listen_changes(bound, next, false, false),
            "listen.proxy 127.0.0.1:3128 -> 0.0.0.0:3128; listen.relay (none) -> "
            "/run/airlock/relay.sock");
}

TEST(ListenChanges, OverriddenAddressesLeftOut) {
  policy::model::listen bound, next;
  next.proxy = "0.0.0.0:3128";
  next.admin = "";
  EXPECT_EQ(listen_changes(bound, next, true, true), "");
  EXPECT_EQ(listen_changes(bound, next, true, false), "listen.admin 127.0.0.1:9464 -> (none)");
}

TEST(DescribeChanges, OperatorsByNameNeverTheirHashes) {
  const std::string h1(64, 'a'), h2(64, 'b'), h3(64, 'c');
  auto before = policy::load_string("operators: {alice: {token_sha256: " + h1 + "}}\n", "p.yaml");
  auto after = policy::load_string(
      "operators: {alice: {token_sha256: " + h2 + "}, bob: {token_sha256: " + h3 + "}}\n",
      "p.yaml");
  ASSERT_TRUE(before.ok() && after.ok());
  const std::string changes = describe_changes(*before.policy, *after.policy);
  EXPECT_EQ(changes, "operators added: bob; operators modified: alice");
  EXPECT_EQ(changes.find(h2), std::string::npos);
}

TEST(FileWatches, FilesOfThePolicy) {
  policy::model::policy p;
  auto secret = [&p](std::string name, std::string file, std::string env) {
    policy::model::secret s;
    s.name = std::move(name);
    s.file = std::move(file);
    s.env = std::move(env);
    p.secrets.push_back(std::move(s));
  };
  secret("a", "/etc/airlock/b", "");
  secret("env", "", "TOKEN");
  secret("c", "/etc/airlock/a", "");
  p.tls.ca_cert = "/etc/airlock/ca.crt";
  p.tls.ca_key = "/etc/airlock/ca.key";
  p.tls.upstream_ca = "/etc/airlock/a";  // named twice: watched once
  EXPECT_EQ(file_watches::files_of(p),
            (std::vector<std::string>{"/etc/airlock/a", "/etc/airlock/b", "/etc/airlock/ca.crt"}));
}

}  // namespace
}  // namespace airlock::proxy
