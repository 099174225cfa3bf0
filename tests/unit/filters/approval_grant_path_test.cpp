// What an `agent_host` grant's path prefix covers (filters/approval/registry_grants.cpp): whole
// segments under the prefix, never a path a server would resolve elsewhere (dot segments,
// encoded slashes and backslashes), which is held as usual instead.
#include "approval_test_util.hpp"
#include "filters/approval/admin_api.hpp"
#include "filters/approval/registry.hpp"

#include <gtest/gtest.h>

namespace airlock::filters::approval {
namespace {

using namespace std::chrono_literals;

using test::get;

grant prefixed(std::string prefix) {
  grant g;
  g.agent = "a";
  g.host = "x.test";
  g.port = 443;
  g.path_prefix = std::move(prefix);
  g.expires = std::chrono::system_clock::now() + 1h;
  return g;
}

bool covers(const grant& g, std::string path) {
  return g.covers(get("a", "x.test", std::move(path)), std::chrono::system_clock::now());
}

TEST(ApprovalGrantPath, DotSegmentsAndHiddenSeparatorsAreNeverUnderAPrefix) {
  const auto g = prefixed("/v1/");
  EXPECT_TRUE(covers(g, "/v1/models"));
  EXPECT_TRUE(covers(g, "/v1/a.b/..c/d..."));  // dots inside names are not dot segments
  for (const char* path : {"/v1/../admin/delete", "/v1/%2e%2e/admin/delete", "/v1/%2E./admin",
                           "/v1/./x", "/v1/x/..", "/v1/..%2fadmin/delete", "/v1/..%2Fadmin",
                           "/v1/..%5cadmin", "/v1/..%5Cadmin", "/v1/..\\admin", "/v1/%2e"})
    EXPECT_FALSE(covers(g, path)) << path;
}

TEST(ApprovalGrantPath, APrefixEndsOnASegmentBoundary) {
  const auto bare = prefixed("/v1");
  EXPECT_TRUE(covers(bare, "/v1"));
  EXPECT_TRUE(covers(bare, "/v1/"));
  EXPECT_TRUE(covers(bare, "/v1/models"));
  EXPECT_FALSE(covers(bare, "/v10/models"));
  EXPECT_FALSE(covers(bare, "/v1.json"));
  EXPECT_FALSE(covers(bare, "/v"));

  const auto slashed = prefixed("/v1/");
  EXPECT_TRUE(covers(slashed, "/v1/"));
  EXPECT_TRUE(covers(slashed, "/v1/models"));
  EXPECT_FALSE(covers(slashed, "/v1"));  // not under "/v1/"
  EXPECT_FALSE(covers(slashed, "/v10/models"));

  const auto root = prefixed("/");
  EXPECT_TRUE(covers(root, "/anything"));
  EXPECT_FALSE(covers(root, "/a/../b"));
}

TEST(ApprovalGrantPath, AHeldDotSegmentPathStaysHeldUnderTheGrant) {
  registry reg;
  std::string why, message;
  auto first = reg.hold(get("a", "x.test", "/v1/models"), {}, 10s, why);
  std::optional<verdict> first_outcome, sneaky_outcome;
  first->start([&](verdict v) { first_outcome = std::move(v); });
  auto sneaky = reg.hold(get("a", "x.test", "/v1/../admin"), {}, 10s, why);
  sneaky->start([&](verdict v) { sneaky_outcome = std::move(v); });
  decision d;
  d.approve = true;
  d.scope = scope::agent_host;
  d.path_prefix = "/v1/";
  d.by = "op";
  ASSERT_TRUE(reg.decide(1, d, message)) << message;
  EXPECT_TRUE(first_outcome && first_outcome->passes());
  EXPECT_FALSE(sneaky_outcome);  // not released by the grant
  EXPECT_EQ(reg.held_count(), 1u);
  EXPECT_FALSE(reg.granted(get("a", "x.test", "/v1/%2e%2e/admin")));
  sneaky->cancel();
}

TEST(ApprovalGrantPath, APrefixThatAServerWouldResolveIsRefused) {
  for (const char* body : {R"({"path_prefix":"/v1/../"})", R"({"path_prefix":"/v1/%2e%2e/"})",
                           R"({"path_prefix":"/v1%2f"})"}) {
    decision d;
    std::string error;
    EXPECT_FALSE(read_decision(body, d, error)) << body;
    EXPECT_NE(error.find("path_prefix"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace airlock::filters::approval
