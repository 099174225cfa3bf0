// Rules' `binaries`: parsing, decide() by program, explain.
#include "policy/binaries.hpp"
#include "policy/explain.hpp"
#include "policy/snapshot.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using core::errc;
using T = test::target_builder;

const std::string git_hash(64, 'a');

constexpr std::string_view two_rules = R"(agents: {default: {rules: [git, other]}}
rules:
  - name: git
    hosts: [github.com]
    binaries: [/usr/bin/git, {path: /usr/bin/pip3, sha256: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA}]
  - {name: other, hosts: [example.com]}
)";

TEST(Binaries, DecideByProgram) {
  auto p = test::must_load(two_rules);
  ASSERT_TRUE(p);
  const auto* agent = p->find_agent("default");
  ASSERT_NE(agent, nullptr);
  const net::peer_binary git{"/usr/bin/git", std::string(64, 'b'), {}};
  const net::peer_binary curl{"/usr/bin/curl", std::string(64, 'b'), {}};
  const net::peer_binary pip_ok{"/usr/bin/pip3", git_hash, {}};
  const net::peer_binary pip_other{"/usr/bin/pip3", std::string(64, 'c'), {}};
  auto with = [&](T t, const net::peer_binary* b) {
    t.t.binary = b;
    return p->decide(*agent, t.t);
  };
  EXPECT_EQ(with(T("github.com", 443), &git).reason, errc::ok);
  EXPECT_EQ(with(T::connect("github.com", 443), &git).reason, errc::ok);
  EXPECT_EQ(with(T("github.com", 443), &pip_ok).reason, errc::ok);  // hash normalised
  const auto curl_d = with(T::connect("github.com", 443), &curl);
  EXPECT_EQ(curl_d.reason, errc::binary_denied);
  EXPECT_EQ(curl_d.detail, "rule git: program /usr/bin/curl is not in its binaries");
  EXPECT_EQ(with(T("github.com", 443), &pip_other).reason, errc::binary_denied);
  // No program (a direct client): fail closed.
  const auto none = with(T("github.com", 443), nullptr);
  EXPECT_EQ(none.reason, errc::binary_denied);
  EXPECT_NE(none.detail.find("has none"), std::string::npos);
  // A rule without binaries takes anyone, and no one.
  EXPECT_EQ(with(T("example.com", 443), nullptr).reason, errc::ok);
  EXPECT_EQ(with(T("example.com", 443), &curl).reason, errc::ok);
  // Other refusals come first: binary_denied only where all else matches.
  EXPECT_EQ(with(T("github.com", 22), &curl).reason, errc::port_denied);
  EXPECT_TRUE(p->names_binaries());
  EXPECT_TRUE(p->names_binary("/usr/bin/git"));
  EXPECT_FALSE(p->names_binary("/usr/bin/curl"));
}

TEST(Binaries, ALaterRuleMayAllowAnotherProgram) {
  auto p = test::must_load(R"(agents: {default: {rules: [git, curl]}}
rules:
  - {name: git, hosts: [github.com], binaries: [/usr/bin/git]}
  - {name: curl, hosts: [github.com], ports: [443], binaries: [/usr/bin/curl]}
)");
  ASSERT_TRUE(p);
  const net::peer_binary curl{"/usr/bin/curl", std::string(64, 'b'), {}};
  T t("github.com", 443);
  t.t.binary = &curl;
  const auto d = p->decide(*p->find_agent("default"), t.t);
  EXPECT_EQ(d.reason, errc::ok);
  EXPECT_EQ(d.rule->name, "curl");
  EXPECT_FALSE(p->names_binaries() && !p->names_binary("/usr/bin/curl"));
}

TEST(Binaries, ParseErrors) {
  const std::string bad[] = {
      "binaries: []",                                        // empty
      "binaries: /usr/bin/git",                              // not a list
      "binaries: [usr/bin/git]",                             // relative
      "binaries: [/usr/bin/../bin/git]",                     // not normalised
      "binaries: [/usr/bin/git/]",                           // trailing slash
      "binaries: [//usr/bin/git]",                           // double slash
      "binaries: [/usr/bin/git, /usr/bin/git]",              // twice
      "binaries: [{path: /usr/bin/git, sha256: abc}]",       // short hash
      "binaries: [{sha256: " + std::string(64, 'a') + "}]",  // no path
      "binaries: [{path: /usr/bin/git, hash: x}]",           // unknown key
      "binaries: [[/usr/bin/git]]",                          // nested list
  };
  for (const auto& b : bad) {
    const std::string yaml = std::string(
                                 "agents: {default: {rules: [r]}}\nrules:\n  - {name: r, "
                                 "hosts: [a.example], ") +
                             b + "}\n";
    const auto r = load_string(yaml, "t.yaml");
    EXPECT_FALSE(r.ok()) << b;
    bool mentions = false;
    for (const auto& e : r.errors)
      mentions = mentions || e.to_string().find("binaries") != std::string::npos;
    EXPECT_TRUE(mentions) << b;
  }
}

TEST(Binaries, Explain) {
  auto p = test::must_load(two_rules);
  ASSERT_TRUE(p);
  explain_request req;
  req.method = "GET";
  req.url = "https://github.com/x";
  auto none = explain(*p, req);
  EXPECT_FALSE(none.allowed);
  EXPECT_NE(none.text.find("binary_denied"), std::string::npos) << none.text;
  EXPECT_NE(none.text.find("give --binary PATH"), std::string::npos) << none.text;
  const net::peer_binary git{"/usr/bin/git", std::string(64, 'b'), {}};
  req.binary = &git;
  auto ok = explain(*p, req);
  EXPECT_TRUE(ok.allowed) << ok.text;
  EXPECT_NE(ok.text.find("program /usr/bin/git ok"), std::string::npos) << ok.text;
  const net::peer_binary curl{"/usr/bin/curl", std::string(64, 'b'), {}};
  req.binary = &curl;
  auto no = explain(*p, req);
  EXPECT_FALSE(no.allowed);
  EXPECT_NE(no.text.find("program /usr/bin/curl is not in [/usr/bin/git, /usr/bin/pip3"),
            std::string::npos)
      << no.text;
  const net::peer_binary pip{"/usr/bin/pip3", std::string(64, 'c'), {}};
  req.binary = &pip;
  auto other_build = explain(*p, req);
  EXPECT_FALSE(other_build.allowed);
  EXPECT_NE(other_build.text.find("is named with a SHA-256 that is not its executable's"),
            std::string::npos)
      << other_build.text;
}

TEST(Binaries, QuotedProgramHidesOddPaths) {
  EXPECT_EQ(quoted_program({"/usr/bin/git", "", {}}), "/usr/bin/git");
  EXPECT_EQ(quoted_program({"/tmp/a b", "", {}}), "(a program with an unprintable path)");
  EXPECT_EQ(quoted_program({"/tmp/\"x", "", {}}), "(a program with an unprintable path)");
  EXPECT_EQ(quoted_program({"/" + std::string(300, 'a'), "", {}}),
            "(a program with an unprintable path)");
}

}  // namespace
}  // namespace airlock::policy
