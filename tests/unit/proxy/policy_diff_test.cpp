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

TEST(ListenChanges, AdminHostsNeedARestart) {
  policy::model::listen bound, next;
  next.admin_hosts = {"a.example", "b.example"};
  EXPECT_EQ(listen_changes(bound, next, false, true),
            "listen.admin_hosts (none) -> a.example,b.example");
}

TEST(ListenChanges, OverriddenAddressesLeftOut) {
  policy::model::listen bound, next;
  next.proxy = "0.0.0.0:3128";
  next.admin = "";
  EXPECT_EQ(listen_changes(bound, next, true, true), "");
  EXPECT_EQ(listen_changes(bound, next, true, false), "listen.admin 127.0.0.1:9464 -> (none)");
}

// A reload names a rule or agent modified whatever key of it changed: checks, inject, redact,
// rate, dlp, mcp, ask, as well as hosts. Comments and layout alone change nothing.
TEST(DescribeChanges, AnyKeyOfARuleOrAgent) {
  auto load = [](const std::string& rule_tail, const std::string& agent_tail) {
    const std::string text =
        "agents:\n  default:\n    rules: [api]\n" + agent_tail +
        "rules:\n  - name: api\n    hosts: [api.example.com]\n    ports: [80]\n" + rule_tail;
    auto r = policy::load_string(text, "policy.yaml");
    EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].to_string());
    return r.policy;
  };
  const auto base = load("", "");
  ASSERT_TRUE(base);
  for (const std::string tail :
       {"    rate: {requests_per_minute: 60}\n", "    methods: [GET]\n",
        "    query: {params: {q: '^[a-z]+$'}}\n", "    headers: {forbidden: [Cookie]}\n",
        "    redact: [email]\n", "    dlp: {action: report}\n",
        "    mcp: {methods: [tools/list]}\n", "    ask: {timeout: 30s}\n"}) {
    const auto next = load(tail, "");
    ASSERT_TRUE(next) << tail;
    EXPECT_EQ(describe_changes(*base, *next), "rules modified: api") << tail;
  }
  const auto limited = load("", "    rate: {requests_per_minute: 60}\n");
  ASSERT_TRUE(limited);
  EXPECT_EQ(describe_changes(*base, *limited), "agents modified: default");
  const auto commented = load("    # the API the agent uses\n", "");
  ASSERT_TRUE(commented);
  EXPECT_EQ(describe_changes(*base, *commented), "");
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
