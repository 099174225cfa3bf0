// Where a placeholder becomes its secret's value on a bound host (secrets.NAME.swap_in), and
// where it is refused instead (find_misplaced): only where a credential goes.
#include "filters/credentials/placement.hpp"

#include "filters/credentials/placeholders.hpp"
#include "policy/loader.hpp"

#include <boost/beast/http/field.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

namespace airlock::filters::credentials {
namespace {
namespace http = boost::beast::http;

constexpr std::string_view kToken = "ghs_REALTOKENVALUE1234567890abcdefABCD";
constexpr std::string_view kPh = "ghs_PLACEHOLDER00000000000000000000000";

std::string ph() {
  return std::string(kPh);
}
std::string tok() {
  return std::string(kToken);
}

// A snapshot with secret gh (placeholder kPh, bound to api.example.com) whose swap_in is
// `swap_in` ("" = the key left out: the default).
std::shared_ptr<const policy::snapshot> load(const std::string& swap_in) {
  ::setenv("AIRLOCK_TEST_GH", std::string(kToken).c_str(), 1);
  const std::string yaml =
      "listen: {proxy: 127.0.0.1:0, admin: ''}\nsecrets:\n  gh:\n    env: AIRLOCK_TEST_GH\n"
      "    placeholder: '" +
      ph() + "'\n    hosts: [api.example.com]\n" +
      (swap_in.empty() ? "" : "    swap_in: " + swap_in + "\n") +
      "agents:\n  default: {rules: [r]}\nrules:\n  - {name: r, hosts: [api.example.com], ports: "
      "[80]}\n";
  auto r = policy::load_string(yaml, "test.yaml");
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  return r.policy;
}

struct request {
  http::fields head;
  std::string target = "/x";
  std::string method = "GET";
  std::string authority = "http://api.example.com";
};

// Where the placeholder is refused ("" when it may be swapped everywhere it is).
std::string misplaced(const policy::snapshot& snap, const request& r) {
  const auto secrets = snap.secrets();
  // The guard searches the target as sent: absolute-form, with the authority.
  const auto found = find_placeholders(secrets, r.head, r.authority + r.target, r.method);
  auto m = find_misplaced(secrets, found, r.head, r.authority, r.target, r.method);
  return m ? m->where : "";
}

// The request as it would be forwarded (after the guard let it through).
request swapped(const policy::snapshot& snap, request r) {
  const auto secrets = snap.secrets();
  const auto found = find_placeholders(secrets, r.head, r.target, r.method);
  swap_placeholders(secrets, found, r.head, r.target);
  return r;
}

TEST(CredentialForms, WholeValueOrOneSchemeThenThePlaceholder) {
  EXPECT_TRUE(credential_value(kPh, kPh));
  EXPECT_TRUE(credential_value("Bearer " + ph(), kPh));
  EXPECT_TRUE(credential_value("token   " + ph(), kPh));
  EXPECT_FALSE(credential_value("Bearer" + ph(), kPh));  // no space: not a scheme
  EXPECT_FALSE(credential_value("Token " + ph() + " end", kPh));
  EXPECT_FALSE(credential_value("Bearer x " + ph(), kPh));  // two words
  EXPECT_FALSE(credential_value("http://b.example/?k=" + ph(), kPh));
  EXPECT_FALSE(credential_value(ph() + "," + ph(), kPh));
  EXPECT_TRUE(credential_param(kPh, kPh));
  EXPECT_TRUE(credential_param("ghs%5FPLACEHOLDER00000000000000000000000", kPh));
  EXPECT_FALSE(credential_param("x" + ph(), kPh));
}

TEST(Placement, DefaultSwapsHeaderAndQueryCredentials) {
  auto snap = load("");
  ASSERT_TRUE(snap);
  request r;
  r.head.insert(http::field::authorization, "Bearer " + ph());
  r.head.insert("X-Api-Key", ph());
  r.head.insert(http::field::accept, "*/*");
  r.target = "/v1/items?key=" + ph() + "&page=2";
  EXPECT_EQ(misplaced(*snap, r), "");
  const request out = swapped(*snap, r);
  EXPECT_EQ(out.head[http::field::authorization], "Bearer " + tok());
  EXPECT_EQ(out.head["X-Api-Key"], tok());
  EXPECT_EQ(out.head[http::field::accept], "*/*");
  EXPECT_EQ(out.target, "/v1/items?key=" + tok() + "&page=2");
}

// The red-team's finding: a webhook URL (or a chat text, a file name) on the bound host that
// would carry the value to wherever the host sends it.
TEST(Placement, DefaultRefusesThePlaceholderInsideOtherFields) {
  auto snap = load("");
  ASSERT_TRUE(snap);
  request r;
  r.target = "/hooks?url=http%3A%2F%2Fb.example%2Fcollect%3Fk%3D" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter url");
  r.target = "/hooks?url=http://b.example/collect?k=" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter url");
  r.target = "/chat?text=hello+" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter text");
  r.target = "/bot" + ph() + "/sendMessage";
  EXPECT_EQ(misplaced(*snap, r), "the path");
  r.target = "/x";
  r.head.insert("X-Wrapped", "Token " + ph() + " end");
  EXPECT_EQ(misplaced(*snap, r), "header X-Wrapped");
  r.head.clear();
  r.head.insert("X-" + ph(), "1");
  EXPECT_EQ(misplaced(*snap, r), "a header name");
  r.head.clear();
  r.method = ph();
  EXPECT_EQ(misplaced(*snap, r), "the method");
  r.method = "GET";
  r.authority = "http://" + ph() + ".api.example.com";
  EXPECT_EQ(misplaced(*snap, r), "the host");
  r.authority.clear();
  // Never swapped there either, should the guard be skipped.
  r.target = "/hooks?url=http://b.example/?k=" + ph();
  r.head.insert("X-Wrapped", "Token " + ph() + " end");
  const request out = swapped(*snap, r);
  EXPECT_EQ(out.target, r.target);
  EXPECT_EQ(out.head["X-Wrapped"], "Token " + ph() + " end");
}

TEST(Placement, PathOnlyWhenListed) {
  auto snap = load("[path]");
  ASSERT_TRUE(snap);
  request r;
  r.target = "/bot" + ph() + "/sendMessage?chat=1";
  EXPECT_EQ(misplaced(*snap, r), "");
  EXPECT_EQ(swapped(*snap, r).target, "/bot" + tok() + "/sendMessage?chat=1");
  // `path` alone: not in a header or the query.
  r.head.insert(http::field::authorization, "Bearer " + ph());
  EXPECT_EQ(misplaced(*snap, r), "header Authorization");
  r.head.clear();
  r.target = "/x?key=" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter key");
}

TEST(Placement, NamedHeaderAndParameterRestrict) {
  auto snap = load("['header:X-Api-Key', 'query:key']");
  ASSERT_TRUE(snap);
  request r;
  r.head.insert("x-api-key", ph());
  r.target = "/x?key=" + ph();
  EXPECT_EQ(misplaced(*snap, r), "");
  const request out = swapped(*snap, r);
  EXPECT_EQ(out.head["X-Api-Key"], tok());
  EXPECT_EQ(out.target, "/x?key=" + tok());
  r.head.insert(http::field::authorization, "Bearer " + ph());
  EXPECT_EQ(misplaced(*snap, r), "header Authorization");
  r.head.erase(http::field::authorization);
  r.target = "/x?q=" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter q");
  // Named, but not a credential form.
  r.target = "/x?key=a" + ph();
  EXPECT_EQ(misplaced(*snap, r), "query parameter key");
}

TEST(Placement, AnywhereKeepsTheOldBehaviour) {
  auto snap = load("[anywhere]");
  ASSERT_TRUE(snap);
  request r;
  r.head.insert("X-Both", ph() + "," + ph());
  r.target = "/bot" + ph() + "/x?url=http://b.example/?k=" + ph();
  EXPECT_EQ(misplaced(*snap, r), "");
  const request out = swapped(*snap, r);
  EXPECT_EQ(out.head["X-Both"], tok() + "," + tok());
  EXPECT_EQ(out.target, "/bot" + tok() + "/x?url=http://b.example/?k=" + tok());
}

TEST(Placement, QueryValuesAreSwappedEncodedAndSeparatorsKept) {
  ::setenv("AIRLOCK_TEST_AMP", "amp-secret-a&b=c+d/e", 1);
  const std::string fake = "amp-PLACEHOLDER-xxxx";
  auto r = policy::load_string(
      "listen: {proxy: 127.0.0.1:0, admin: ''}\nsecrets:\n  amp: {env: AIRLOCK_TEST_AMP, "
      "placeholder: '" +
          fake + "', hosts: [api.example.com]}\nagents:\n  default: {rules: []}\nrules: []\n",
      "test.yaml");
  ASSERT_TRUE(r.policy) << (r.errors.empty() ? "" : r.errors[0].to_string());
  const auto secrets = r.policy->secrets();
  http::fields head;
  std::string target = "/x?&a=1&k=" + fake + "&flag&";
  const auto found = find_placeholders(secrets, head, target);
  ASSERT_FALSE(find_misplaced(secrets, found, head, "", target, "GET"));
  swap_placeholders(secrets, found, head, target);
  // The value's '&', '=', '+' and '/' cannot start another parameter or read as a space.
  EXPECT_EQ(target, "/x?&a=1&k=amp-secret-a%26b%3Dc%2Bd%2Fe&flag&");
}

TEST(Placement, NamesShownOnlyWhenTheyRepeatNoPlaceholder) {
  auto snap = load("");
  ASSERT_TRUE(snap);
  request r;
  r.target = "/x?" + ph() + "=" + ph();
  const std::string where = misplaced(*snap, r);
  EXPECT_EQ(where.find(kPh), std::string::npos) << where;
  EXPECT_EQ(where, "query parameter (a name not shown)");
}

}  // namespace
}  // namespace airlock::filters::credentials
