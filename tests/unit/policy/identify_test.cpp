#include "policy/snapshot.hpp"

#include "policy/token.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

namespace airlock::policy {
namespace {

using boost::asio::ip::make_address;
using core::errc;

// base64 for test inputs (the code under test only decodes).
std::string b64(std::string_view in) {
  static constexpr char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
  }
  if (in.size() - i == 1) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {a[v >> 18], a[(v >> 12) & 63], '=', '='};
  } else if (in.size() - i == 2) {
    const unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], '='};
  }
  return out;
}

class Identify : public ::testing::Test {
 protected:
  void SetUp() override {
    policy_ = test::must_load(
        "agents:\n"
        "  default: {}\n"
        "  coder: {token_sha256: " +
        sha256_hex("coder-token") +
        "}\n"
        "  ci:\n"
        "    token_sha256: " +
        sha256_hex("ci-token") +
        "\n"
        "    sources: ['10.0.0.0/8', 'fd00::/8']\n"
        "  lab: {sources: ['10.5.0.0/16', '192.168.1.7']}\n");
    ASSERT_TRUE(policy_);
  }
  identity id(std::string_view header, std::string_view client = "192.0.2.1") const {
    return policy_->identify(header, make_address(client));
  }
  std::string name(const identity& i) const { return i.agent ? i.agent->name : "<none>"; }

  std::shared_ptr<const snapshot> policy_;
};

TEST_F(Identify, Basic) {
  auto i = id("Basic " + b64("coder:coder-token"));
  EXPECT_EQ(name(i), "coder");
  EXPECT_EQ(i.error, errc::ok);
  // The scheme is case-insensitive (RFC 9110 section 11.1); spaces around are tolerated.
  EXPECT_EQ(name(id("basic  " + b64("ci:ci-token") + " ")), "ci");
  EXPECT_EQ(name(id("BASIC " + b64("ci:ci-token"))), "ci");
  // The token may contain ':' (only the first one splits).
  auto p = test::must_load("agents: {a: {token_sha256: " + sha256_hex("x:y") + "}}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->identify("Basic " + b64("a:x:y"), make_address("127.0.0.1")).agent->name, "a");
}

TEST_F(Identify, Bearer) {
  EXPECT_EQ(name(id("Bearer coder-token")), "coder");
  EXPECT_EQ(name(id("bearer ci-token")), "ci");
  // The header overrides the source address.
  EXPECT_EQ(name(id("Bearer coder-token", "10.1.2.3")), "coder");
}

TEST_F(Identify, WrongCredentialsAreRefused) {
  const std::string cases[] = {
      "Basic " + b64("coder:s3cr3t"),                 // bad token
      "Basic " + b64("ci:coder-token"),               // another agent's token
      "Basic " + b64("nobody:coder-token"),           // unknown agent
      "Basic " + b64("default:"),                     // agent without a token
      "Basic " + b64("lab:anything"),                 // agent without a token
      "Basic " + b64("coder-token"),                  // no colon
      "Basic " + b64("coder:"),                       // empty token
      "Basic !!!!",                                   // not base64
      "Basic " + b64("coder:coder-token").substr(1),  // broken length
      "Basic",                                        // no credentials
      "Bearer s3cr3t",
      "Bearer",
      "Digest username=coder",
      "coder-token",
  };
  for (const auto& header : cases) {
    const auto i = id(header, "10.1.2.3");  // a source that would match: no fallback
    EXPECT_EQ(i.agent, nullptr) << header;
    EXPECT_EQ(i.error, errc::auth_required) << header;
    EXPECT_FALSE(i.detail.empty()) << header;
    // The detail never carries the token (nor a name the client may have confused with it).
    EXPECT_EQ(i.detail.find("token-"), std::string::npos) << i.detail;
    EXPECT_EQ(i.detail.find("coder-token"), std::string::npos) << i.detail;
    EXPECT_EQ(i.detail.find("s3cr3t"), std::string::npos) << i.detail;
  }
}

TEST_F(Identify, DetailsSayWhatIsWrong) {
  EXPECT_EQ(id("Basic " + b64("coder:bad")).detail, "wrong agent name or token");
  EXPECT_EQ(id("Basic %%%%").detail, "malformed Basic credentials");
  EXPECT_EQ(id("Bearer nope").detail, "no agent has this token");
  EXPECT_EQ(id("Negotiate abc").detail,
            "unsupported Proxy-Authorization scheme; use Basic or Bearer");
}

TEST_F(Identify, SourcesInFileOrder) {
  EXPECT_EQ(name(id("", "10.5.1.1")), "ci");  // ci comes first and contains 10.0.0.0/8
  EXPECT_EQ(name(id("", "192.168.1.7")), "lab");
  EXPECT_EQ(name(id("", "fd00::5")), "ci");
  EXPECT_EQ(name(id("", "::ffff:192.168.1.7")), "lab");  // IPv4-mapped matches its IPv4 form
  EXPECT_EQ(name(id("", "192.168.1.8")), "default");
}

TEST_F(Identify, DefaultAgent) {
  const auto i = id("", "203.0.113.9");
  EXPECT_EQ(name(i), "default");
  EXPECT_EQ(i.error, errc::ok);
  EXPECT_EQ(name(id("   ", "203.0.113.9")), "default");  // blank header = absent
}

TEST_F(Identify, NoDefaultAgent) {
  auto p = test::must_load("agents: {lab: {sources: ['10.0.0.0/8']}}\n");
  ASSERT_TRUE(p);
  const auto i = p->identify("", make_address("192.0.2.1"));
  EXPECT_EQ(i.agent, nullptr);
  EXPECT_EQ(i.error, errc::auth_required);
  EXPECT_EQ(i.detail, "no default agent; authenticate with Proxy-Authorization");
  EXPECT_EQ(p->identify("", make_address("10.9.9.9")).agent->name, "lab");
}

// The order of trust: the launcher's relay, then Proxy-Authorization, then the source address,
// then `default`.
TEST_F(Identify, RelayComesFirst) {
  const auto ci_source = make_address("10.1.2.3");
  // The relay's agent wins over another agent's valid credentials and over the source.
  auto i = policy_->identify("lab", "Bearer coder-token", ci_source);
  EXPECT_EQ(name(i), "lab");
  EXPECT_EQ(i.error, errc::ok);
  // A relay naming an agent the policy lacks is refused, not demoted to a weaker identity.
  i = policy_->identify("ghost", "Bearer coder-token", ci_source);
  EXPECT_EQ(i.agent, nullptr);
  EXPECT_EQ(i.error, errc::auth_required);
  EXPECT_NE(i.detail.find("ghost"), std::string::npos);
  // Without a relay: credentials, then source, then default.
  EXPECT_EQ(name(policy_->identify("", "Bearer coder-token", ci_source)), "coder");
  EXPECT_EQ(name(policy_->identify("", "", ci_source)), "ci");
  EXPECT_EQ(name(policy_->identify("", "", make_address("203.0.113.9"))), "default");
  // Credentials that are wrong are refused even from an identified source.
  EXPECT_EQ(policy_->identify("", "Bearer wrong", ci_source).agent, nullptr);
}

TEST_F(Identify, UppercaseHashInPolicyStillMatches) {
  std::string upper = sha256_hex("tok");
  for (char& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto p = test::must_load("agents: {a: {token_sha256: '" + upper + "'}}\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->identify("Bearer tok", make_address("127.0.0.1")).agent->name, "a");
}

}  // namespace
}  // namespace airlock::policy
