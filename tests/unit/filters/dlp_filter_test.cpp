#include "filters/dlp/dlp_filter.hpp"
#include "deflate_text.hpp"
#include "filters/chain.hpp"
#include "filters/pipeline.hpp"
#include "filters/rate_limit/registry.hpp"
#include "filters/redaction/retired_secrets.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

// The DLP filter in the real chain of a policy, on hand-built exchanges (no sockets): the
// `dlp` keys, each action, each location, the blocklist and host-name checks.
namespace airlock::filters {
namespace {
namespace http = boost::beast::http;

constexpr const char* kAws = "AKIAIOSFODNN7EXAMPLE";

class dlp_test : public ::testing::Test {
 protected:
  void load(const std::string& yaml, redaction::retired_secrets* retired = nullptr) {
    auto r = policy::load_string(yaml, "dlp.yaml");
    for (const auto& e : r.errors)
      ADD_FAILURE() << e.to_string();
    ASSERT_TRUE(r.policy);
    lasting_state state{&rates_, nullptr, retired};
    auto built = pipeline::build(r.policy, state);
    for (const auto& e : built.errors)
      ADD_FAILURE() << e;
    ASSERT_TRUE(built.built);
    pipeline_ = built.built;
  }

  exchange& request(http::verb method, std::string_view host, std::string_view target) {
    req_ = {};
    req_.method(method);
    req_.target(target);
    ex_ = std::make_unique<exchange>();
    auto& ex = *ex_;
    ex.snapshot = &pipeline_->snapshot();
    ex.request = &req_;
    ex.target.host = *net::normalize_host(host);
    ex.target.port = 80;
    ex.path_and_query = std::string(target);
    ex.path = ex.path_and_query.substr(0, ex.path_and_query.find('?'));
    ex.agent = ex.snapshot->find_agent("default");
    ex.record.agent = "default";
    ex.body_limit = ex.snapshot->limits().body_bytes;
    return ex;
  }

  rate_limit::registry rates_;
  std::shared_ptr<const pipeline> pipeline_;
  http::request<http::empty_body> req_;
  std::unique_ptr<exchange> ex_;
};

const char* kPolicy = R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
dlp: {action: block}
blocklist: [exfil-collector.example.net, '*.paste.example']
agents:
  default: {rules: [named, quiet, off, web]}
rules:
  - name: named
    hosts: [7365637265745f6170695f6b65795f3132333435.data.example.com]
    ports: [80]
  - name: quiet
    hosts: [report.example.com]
    ports: [80]
    dlp: {action: report, classes: [aws-access-key], max_body_bytes: 16}
  - name: off
    hosts: [off.example.com]
    ports: [80]
    dlp: off
  - name: web
    host_regex: ['.*\.example\.(com|net)|.*\.paste\.example']
    ports: [80]
)";

TEST_F(dlp_test, BlocksAFindingInEachPlace) {
  load(kPolicy);
  struct place {
    const char* target;
    const char* header;
    const char* location;
  };
  for (const place& p : {place{"/api?key=AKIAIOSFODNN7EXAMPLE", nullptr, "query"},
                         place{"/data/AKIAIOSFODNN7EXAMPLE/x", nullptr, "path"},
                         place{"/", "Bearer AKIAIOSFODNN7EXAMPLE", "header"}}) {
    auto& ex = request(http::verb::get, "evil.example.com", p.target);
    if (p.header) req_.set(http::field::authorization, p.header);
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused()) << p.target;
    EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
    EXPECT_NE(ex.record.detail.find("aws-access-key"), std::string::npos) << ex.record.detail;
    EXPECT_EQ(ex.record.detail.find(kAws), std::string::npos) << "the value leaked";
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].location, p.location);
    EXPECT_EQ(ex.record.dlp[0].action, "block");
  }
  {
    auto& ex = request(http::verb::get, "evil.example.com", "/");
    req_.set(http::field::cookie, "a=1; token=ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].cls, "github-token");
    EXPECT_EQ(ex.record.dlp[0].location, "cookie");
  }
}

// A secret's value a reload replaced may still be valid at its provider: a request that carries
// it is refused for a day after, as one carrying the current value is.
TEST_F(dlp_test, ARotatedSecretsOldValueIsStillRefused) {
  constexpr const char* kOld = "rot-DLPTEST-old-value-1111111111";
  constexpr const char* kNew = "rot-DLPTEST-new-value-2222222222";
  const std::string policy = std::string(kPolicy) + R"(
secrets:
  rotated: {env: AIRLOCK_UT_DLP_ROTATED, hosts: [api.example.com]}
)";
  redaction::retired_secrets retired;
  ::setenv("AIRLOCK_UT_DLP_ROTATED", kOld, 1);
  load(policy, &retired);
  ::setenv("AIRLOCK_UT_DLP_ROTATED", kNew, 1);
  load(policy, &retired);
  for (const char* value : {kNew, kOld}) {
    auto& ex = request(http::verb::get, "evil.example.com", "/");
    req_.set("X-Note", value);
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused()) << value;
    ASSERT_EQ(ex.record.dlp.size(), 1u) << value;
    EXPECT_EQ(ex.record.dlp[0].cls, "secret:rotated");
    EXPECT_EQ(ex.record.detail.find(value), std::string::npos) << "the value leaked";
  }
  load(policy);  // without the values kept (a first load), only the current one is known
  ::unsetenv("AIRLOCK_UT_DLP_ROTATED");
  auto& ex = request(http::verb::get, "evil.example.com", "/");
  req_.set("X-Note", kOld);
  chain c(pipeline_->factories(), ex);
  EXPECT_FALSE(c.request_head().refused());
}

TEST_F(dlp_test, BodiesWholeAndStreamed) {
  load(kPolicy);
  {
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    ex.content_length = 40;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    EXPECT_TRUE(c.request_body(R"({"k":"AKIAIOSFODNN7EXAMPLE"})", true).refused());
    EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
    EXPECT_EQ(ex.record.dlp.at(0).location, "body");
  }
  {
    // No length (chunked): streamed, a key split between two pieces is still found.
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    EXPECT_TRUE(c.request_body("{\"k\":\"AKIAIOSF", false).passes());
    EXPECT_TRUE(c.request_body("ODNN7EXAMPLE\"}", true).refused());
  }
  {
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    EXPECT_TRUE(
        c.request_body(R"({"title":"standup","id":"550e8400-e29b-41d4-a716-446655440000"})", true)
            .passes());
    EXPECT_TRUE(ex.record.dlp.empty());
  }
}

TEST_F(dlp_test, StreamedPiecesAreReadBeforeTheyGoOn) {
  load(kPolicy);
  {
    // A key in the first piece of a chunked body is refused before that piece is sent, not
    // when a window fills or the body ends (a client that stalls got each piece out unread).
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    ASSERT_EQ(c.request_body_use(), body_use::observe);
    EXPECT_TRUE(c.request_body("aws_access_key_id=AKIAIOSFODNN7EXAMPLE\n", false).refused());
    EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
  }
  {
    // A Content-Length above max_body_bytes streams too; a long clean body goes through piece
    // by piece, and a key split across two pieces far into it is still found.
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    ex.content_length = 4u << 20;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    ASSERT_EQ(c.request_body_use(), body_use::observe);
    const std::string clean(16 * 1024, 'a');
    std::string text;
    for (int i = 0; i < 64; ++i) {
      text = clean;
      for (std::size_t j = 0; j < text.size(); j += 64)
        text[j] = ' ';
      ASSERT_TRUE(c.request_body(text, false).passes()) << i;
    }
    EXPECT_TRUE(c.request_body(std::string(100, ' ') + "AKIAIOSFOD", false).passes());
    EXPECT_TRUE(c.request_body("NN7EXAMPLE " + std::string(100, ' '), false).refused());
  }
}

TEST_F(dlp_test, ATrickledBodyIsStillReadBeforeEachPieceGoesOn) {
  // A byte a piece spends the stream's scanning budget (carry.hpp); a key sent so after that
  // is still refused on the byte that completes it, whatever comes before.
  load(kPolicy);
  auto& ex = request(http::verb::post, "evil.example.com", "/");
  ex.has_body = true;
  chain c(pipeline_->factories(), ex);
  ASSERT_TRUE(c.request_head().passes());
  ASSERT_EQ(c.request_body_use(), body_use::observe);
  const std::string filler = "{\"note\": \"" + std::string(3000, 'n') + "\", \"k\": \"";
  for (char ch : filler)
    ASSERT_TRUE(c.request_body(std::string_view(&ch, 1), false).passes());
  const std::string key = kAws;
  for (std::size_t i = 0; i + 1 < key.size(); ++i)
    ASSERT_TRUE(c.request_body(key.substr(i, 1), false).passes()) << i;
  EXPECT_TRUE(c.request_body(key.substr(key.size() - 1), false).refused());
  EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
}

TEST_F(dlp_test, HeaderNamesAndTheMethodAreRead) {
  load(kPolicy);
  {
    auto& ex = request(http::verb::get, "evil.example.com", "/");
    req_.insert(kAws, "1");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].location, "header-name");
  }
  for (const char* name : {"X-AKIAIOSFODNN7EXAMPLE-Id", "x-akiaiosfodnn7example"}) {
    auto& ex = request(http::verb::get, "evil.example.com", "/");
    req_.insert(name, "");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused()) << name;
  }
  {
    // A method is any token (RFC 9110 section 9.1): the key must not reach the origin, nor
    // the audit record as the method.
    auto& ex = request(http::verb::get, "evil.example.com", "/x");
    req_.method_string(kAws);
    ex.record.method = kAws;
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].location, "method");
    EXPECT_EQ(ex.record.method.find(kAws), std::string::npos) << ex.record.method;
    EXPECT_EQ(ex.record.detail.find(kAws), std::string::npos);
  }
  {
    // Ordinary names and methods find nothing.
    auto& ex = request(http::verb::patch, "evil.example.com", "/");
    req_.set(http::field::content_type, "application/json");
    req_.set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD");
    req_.set("X-GitHub-Api-Version", "2022-11-28");
    req_.set("Sec-Ch-Ua-Platform", "\"Linux\"");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes()) << ex.record.detail;
    EXPECT_TRUE(ex.record.dlp.empty());
  }
}

TEST_F(dlp_test, RequestTrailersAreRead) {
  load(kPolicy);
  {
    // (A chain lives no longer than its exchange, which the next request() replaces.)
    auto& ex = request(http::verb::post, "evil.example.com", "/");
    ex.has_body = true;
    chain c(pipeline_->factories(), ex);
    ASSERT_TRUE(c.request_head().passes());
    ASSERT_TRUE(c.request_body("{}", true).passes());
    http::fields clean;
    clean.set("grpc-status", "0");
    EXPECT_TRUE(c.trailers(clean, false).passes());
    // Response trailers are the redaction filter's.
    http::fields response;
    response.set("x-checksum", kAws);
    EXPECT_TRUE(c.trailers(response, true).passes());
  }
  // HTTP/2 sends names in lower case: read upper-cased too.
  for (const std::string name :
       {"x-checksum", "x-AKIAIOSFODNN7EXAMPLE", "x-akiaiosfodnn7example"}) {
    const bool in_name = name != "x-checksum";
    http::fields bad;
    bad.set(name, in_name ? "1" : kAws);
    auto& ex2 = request(http::verb::post, "evil.example.com", "/");
    ex2.has_body = true;
    chain c2(pipeline_->factories(), ex2);
    ASSERT_TRUE(c2.request_head().passes());
    EXPECT_TRUE(c2.trailers(bad, false).refused()) << in_name;
    EXPECT_EQ(ex2.record.reason, core::errc::dlp_blocked);
    ASSERT_EQ(ex2.record.dlp.size(), 1u);
    EXPECT_EQ(ex2.record.dlp[0].location, "trailer");
  }
}

TEST_F(dlp_test, WebSocketKeyIsExemptOnlyOnAnAllowedUpgrade) {
  load(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
dlp: {action: block, entropy: true}
agents:
  default: {rules: [ws, plain]}
rules:
  - name: ws
    hosts: [ws.example.com]
    ports: [80]
    upgrades: [websocket]
  - name: plain
    hosts: [plain.example.com]
    ports: [80]
)");
  constexpr const char* kNonce = "dGhlIHNhbXBsZSBub25jZQ==";  // RFC 6455 section 1.3
  struct attempt {
    const char* host;
    bool upgrade;
    std::string key;
    bool passes;
  };
  const attempt attempts[] = {
      {"ws.example.com", true, kNonce, true},
      {"ws.example.com", true, "x3JJHMbDL1EzLkh9GBhXDw==", true},
      // Not the base64 of 16 bytes: read as any header value is.
      {"ws.example.com", true, kAws, false},
      // The shape of a nonce, spelling a key.
      {"ws.example.com", true, std::string(kAws) + "/A==", false},
      {"ws.example.com", true, "QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", false},
      // No upgrade, or one the rule does not allow.
      {"ws.example.com", false, kAws, false},
      {"plain.example.com", true, kAws, false},
  };
  for (const auto& a : attempts) {
    auto& ex = request(http::verb::get, a.host, "/chat");
    if (a.upgrade) ex.upgrade = "websocket";
    req_.set(http::field::sec_websocket_key, a.key);
    chain c(pipeline_->factories(), ex);
    EXPECT_EQ(c.request_head().passes(), a.passes) << a.host << " " << a.key;
  }
}

TEST_F(dlp_test, AKeyInHostLabelsWhateverTheCaseOrTheCuts) {
  load(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
dlp: {action: block, entropy: true}
agents:
  default: {rules: [any]}
rules:
  - name: any
    host_regex: ['.*']
    ports: [80]
)");
  // Lower-cased on the way in, glued to a hyphen, cut over labels or at a hyphen.
  for (const char* host : {"akiaqz4r7wjx2mnb5kte.wild.test", "x-akiaqz4r7wjx2mnb5kte.wild.test",
                           "akiaqz4r7w.jx2mnb5kte.wild.test", "akiaqz4r7w-jx2mnb5kte.wild.test",
                           "akia.qz4r7wjx.2mnb5kte.x.wild.test"}) {
    auto& ex = request(http::verb::get, host, "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused()) << host;
    EXPECT_TRUE(ex.record.reason == core::errc::dlp_blocked ||
                ex.record.reason == core::errc::hostname_exfiltration)
        << host << ": " << ex.record.detail;
    EXPECT_EQ(ex.record.host, "[REDACTED:dlp].wild.test");
  }
  // Names agents reach every day pass.
  for (const char* host : {"api.github.com",
                           "objects.githubusercontent.com",
                           "raw.githubusercontent.com",
                           "s3.us-west-2.amazonaws.com",
                           "my-bucket-2024.s3.eu-central-1.amazonaws.com",
                           "ec2-54-123-45-67.compute-1.amazonaws.com",
                           "sts.ap-southeast-2.amazonaws.com",
                           "d111111abcdef8.cloudfront.net",
                           "e1234.dscb.akamaiedge.net",
                           "pypi.org",
                           "files.pythonhosted.org",
                           "registry-1.docker.io",
                           "production.cloudflare.docker.com",
                           "storage.googleapis.com",
                           "us-central1-aiplatform.googleapis.com",
                           "login.microsoftonline.com",
                           "myaccount.blob.core.windows.net",
                           "api.openai.com",
                           "api.anthropic.com",
                           "cdn.jsdelivr.net",
                           "deb.debian.org",
                           "dl-cdn.alpinelinux.org",
                           "proxy.golang.org",
                           "index.crates.io",
                           "repo1.maven.org",
                           "api.nuget.org",
                           "de01-prod-web-7.example.com",
                           "gb82-west-12-3456.example.com",
                           "xn--bcher-kva.example",
                           "ip-10-0-12-34.eu-west-1.compute.internal",
                           "node-20-12-2-linux-x64.example.org",
                           "sentry.io",
                           "o123456.ingest.sentry.io",
                           "hooks.slack.com",
                           "api.stripe.com"}) {
    auto& ex = request(http::verb::get, host, "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes()) << host << ": " << ex.record.detail;
  }
}

TEST_F(dlp_test, CodedRequestBodiesAreReadDecodedOrRefused) {
  load(kPolicy);
  const std::string body = std::string("{\"k\":\"") + kAws + "\"}";
  const auto post = [&](std::string_view host, std::string_view coding, std::size_t length,
                        std::string_view type = "application/json") -> exchange& {
    auto& ex = request(http::verb::post, host, "/");
    ex.has_body = true;
    if (length) ex.content_length = length;
    if (!coding.empty()) req_.set(http::field::content_encoding, coding);
    req_.set(http::field::content_type, type);
    return ex;
  };
  struct coded {
    const char* coding;
    int bits;
  };
  for (const coded c : {coded{"gzip", 15 + 16}, coded{"deflate", 15}, coded{"deflate", -15},
                        coded{"x-gzip", 15 + 16}}) {
    const std::string z = test::deflate_text(body, c.bits);
    {
      auto& ex = post("evil.example.com", c.coding, z.size());  // held whole
      chain ch(pipeline_->factories(), ex);
      ASSERT_TRUE(ch.request_head().passes());
      EXPECT_TRUE(ch.request_body(z, true).refused()) << c.coding;
      EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
    }
    {
      auto& ex = post("evil.example.com", c.coding, 0);  // streamed, a byte at a time
      chain ch(pipeline_->factories(), ex);
      ASSERT_TRUE(ch.request_head().passes());
      bool refused = false;
      for (std::size_t i = 0; i < z.size() && !refused; ++i)
        refused = ch.request_body(z.substr(i, 1), i + 1 == z.size()).refused();
      EXPECT_TRUE(refused) << c.coding;
    }
  }
  {
    // A clean coded body passes.
    auto& ex = post("evil.example.com", "gzip", 0);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body(test::deflate_text(R"({"title":"standup"})"), true).passes());
    EXPECT_TRUE(ex.record.dlp.empty());
  }
  // Codings DLP cannot read, stacked ones, and corrupt data: refused under block.
  for (const char* coding : {"br", "zstd", "gzip, gzip", "compress"}) {
    auto& ex = post("evil.example.com", coding, 10);
    chain ch(pipeline_->factories(), ex);
    EXPECT_TRUE(ch.request_head().refused()) << coding;
    EXPECT_EQ(ex.record.reason, core::errc::dlp_blocked);
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].cls, "unreadable-coding");
  }
  {
    // Labelled gzip but not: the key is read as sent (an origin that stores the bytes keeps
    // them so), and the data that does not decode is refused too.
    auto& ex = post("evil.example.com", "gzip", 0);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body(body, true).refused());
    EXPECT_EQ(ex.record.dlp.at(0).cls, "aws-access-key");
  }
  {
    auto& ex = post("evil.example.com", "gzip", 0);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body("not gzip at all, nothing secret", true).refused());
    EXPECT_EQ(ex.record.dlp.at(0).cls, "unreadable-coding");
  }
  {
    // What an inflater skips: the gzip header's file name (RFC 1952 section 2.3, FNAME), and
    // bytes after the stream's end. An origin that stores the body keeps both.
    std::string named = test::deflate_text("nothing here");
    named[3] = 0x08;  // FLG.FNAME: a zero-terminated name follows the 10-byte header
    named.insert(10, std::string(kAws) + std::string(1, '\0'));
    for (const std::string& coded :
         {named, test::deflate_text("clean") + " trailing " + std::string(kAws)}) {
      auto& ex = post("evil.example.com", "gzip", 0);
      chain ch(pipeline_->factories(), ex);
      ASSERT_TRUE(ch.request_head().passes());
      EXPECT_TRUE(ch.request_body(coded, true).refused());
      EXPECT_EQ(ex.record.dlp.at(0).cls, "aws-access-key");
    }
  }
  {
    // Under report, a body that does not decode is recorded once, however many pieces follow.
    auto& ex = post("report.example.com", "gzip", 0);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    for (int i = 0; i < 5; ++i)
      EXPECT_TRUE(ch.request_body("still not gzip ", false).passes());
    EXPECT_EQ(ex.record.dlp.size(), 1u);
  }
  {
    // report records it and lets it through.
    auto& ex = post("report.example.com", "br", 10);
    chain ch(pipeline_->factories(), ex);
    EXPECT_TRUE(ch.request_head().passes());
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].action, "report");
  }
  {
    // gRPC messages compressed with a grpc-encoding: refused; identity passes.
    auto& ex = post("evil.example.com", "", 0, "application/grpc");
    req_.set("grpc-encoding", "gzip");
    chain ch(pipeline_->factories(), ex);
    EXPECT_TRUE(ch.request_head().refused());
  }
  for (const char* type : {"application/octet-stream", "text/plain"}) {
    // The same messages under another label: the server decompresses them all the
    // same (red team 21: grpc-encoding without a gRPC Content-Type went out unread).
    auto& ex = post("evil.example.com", "", 0, type);
    req_.set("grpc-encoding", "gzip");
    chain ch(pipeline_->factories(), ex);
    EXPECT_TRUE(ch.request_head().refused()) << type;
  }
  {
    // Connect's streams compress their messages under connect-content-encoding.
    auto& ex = post("evil.example.com", "", 0, "application/connect+proto");
    req_.set("connect-content-encoding", "gzip");
    chain ch(pipeline_->factories(), ex);
    EXPECT_TRUE(ch.request_head().refused());
  }
  {
    auto& ex2 = post("evil.example.com", "", 0, "application/grpc+proto");
    req_.set("grpc-encoding", "identity");
    chain ch2(pipeline_->factories(), ex2);
    EXPECT_TRUE(ch2.request_head().passes());
  }
}

TEST_F(dlp_test, GrpcAndProtobufBodiesAreReadFieldByField) {
  // The key opens a string field of 65 bytes: its length byte is 'A', so as bytes it has a
  // letter on its left (red team 21). Each field is read on its own, however the body arrives.
  load(kPolicy);
  const std::string key_field = std::string(kAws) + " " + std::string(44, 'x');
  const std::string message = std::string("\x0a\x41") + key_field + "\x32\x01z";
  const std::string framed =
      std::string("\0\0\0\0", 4) + static_cast<char>(message.size()) + message;
  const auto post = [&](std::string_view type, std::optional<std::size_t> length) -> exchange& {
    auto& ex = request(http::verb::post, "evil.example.com", "/airlock.test.Echo/Any");
    ex.has_body = true;
    ex.content_length = length;
    req_.set(http::field::content_type, type);
    return ex;
  };
  for (std::size_t step : {framed.size(), std::size_t{7}, std::size_t{1}}) {
    auto& ex = post("application/grpc", std::nullopt);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    bool refused = false;
    for (std::size_t at = 0; at < framed.size() && !refused; at += step)
      refused =
          ch.request_body(std::string_view(framed).substr(at, step), at + step >= framed.size())
              .refused();
    EXPECT_TRUE(refused) << step;
    EXPECT_EQ(ex.record.dlp.at(0).cls, "aws-access-key");
  }
  {
    // Half the key in each of two messages of a stream: read joined.
    const auto frame = [](std::string_view m) {
      return std::string("\0\0\0\0", 4) + static_cast<char>(m.size()) + std::string(m);
    };
    const std::string halves = frame(std::string("\x0a\x0a") + std::string(kAws).substr(0, 10)) +
                               frame(std::string("\x0a\x0a") + std::string(kAws).substr(10));
    auto& ex = post("application/grpc", std::nullopt);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body(std::string_view(halves).substr(0, 15), false).passes());
    EXPECT_TRUE(ch.request_body(std::string_view(halves).substr(15), true).refused());
  }
  {
    auto& ex = post("application/x-protobuf", message.size());  // held whole
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body(message, true).refused());
  }
  {
    // A clean message passes; one gRPC message over max_body_bytes cannot be read: refused.
    auto& ex = post("application/grpc", std::nullopt);
    chain ch(pipeline_->factories(), ex);
    ASSERT_TRUE(ch.request_head().passes());
    EXPECT_TRUE(ch.request_body(std::string("\0\0\0\0\x03\x0a\x01z", 8), false).passes());
    EXPECT_TRUE(ch.request_body(std::string("\0\x7f\xff\xff\xff", 5), false).refused());
    EXPECT_EQ(ex.record.dlp.at(0).cls, "unreadable-coding");
  }
}

TEST_F(dlp_test, ReportLetsThroughAndRecords) {
  load(kPolicy);
  {
    auto& ex = request(http::verb::get, "report.example.com", "/?k=AKIAIOSFODNN7EXAMPLE");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes());
    EXPECT_EQ(ex.record.reason, core::errc::ok);
    ASSERT_EQ(ex.record.dlp.size(), 1u);
    EXPECT_EQ(ex.record.dlp[0].action, "report");
  }
  {
    // The rule lists only aws-access-key: a GitHub token is not its business.
    auto& ex = request(http::verb::get, "report.example.com",
                       "/?k=ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes());
    EXPECT_TRUE(ex.record.dlp.empty());
  }
}

TEST_F(dlp_test, OffRuleIsNotScanned) {
  load(kPolicy);
  auto& ex = request(http::verb::get, "off.example.com", "/?k=AKIAIOSFODNN7EXAMPLE");
  chain c(pipeline_->factories(), ex);
  EXPECT_TRUE(c.request_head().passes());
  EXPECT_TRUE(ex.record.dlp.empty());
}

TEST_F(dlp_test, BlocklistAndHostNames) {
  load(kPolicy);
  {
    auto& ex = request(http::verb::get, "exfil-collector.example.net", "/beacon");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::host_blocklisted);
  }
  {
    auto& ex = request(http::verb::get, "x.paste.example", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::host_blocklisted);
  }
  {
    auto& ex = request(http::verb::get, "jbswy3dpehpk3pxp.exfil.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::hostname_exfiltration);
  }
  {
    // A CONNECT is judged by its host too.
    auto& ex = request(http::verb::connect, "jbswy3dpehpk3pxp.exfil.example.com", "");
    ex.connect = true;
    ex.target.port = 80;
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().refused());
    EXPECT_EQ(ex.record.reason, core::errc::hostname_exfiltration);
  }
  {
    // A host a rule names exactly is the operator's choice.
    auto& ex =
        request(http::verb::get, "7365637265745f6170695f6b65795f3132333435.data.example.com", "/");
    chain c(pipeline_->factories(), ex);
    EXPECT_TRUE(c.request_head().passes()) << ex.record.detail;
  }
}

TEST(dlp_policy, KeysAreChecked) {
  for (const char* bad :
       {"dlp: {action: maybe}\n", "dlp: {classes: nope}\n", "dlp: {max_body_bytes: 0}\n",
        "dlp: {entropy: yes}\n", "dlp: {colour: red}\n", "blocklist: ['bad host!']\n", "dlp: [1]\n",
        "dlp: {responses: maybe}\n"}) {
    auto r = policy::load_string(bad, "dlp.yaml");
    EXPECT_FALSE(r.errors.empty()) << bad;
    if (!r.errors.empty()) {
      EXPECT_EQ(r.errors[0].key.substr(0, 3), std::string(bad).substr(0, 3));
    }
  }
  auto r = policy::load_string(
      "dlp: {action: report, classes: [iban], entropy: true, "
      "responses: annotate, max_body_bytes: 64KiB}\nblocklist: ['*.example.net']\n",
      "dlp.yaml");
  ASSERT_TRUE(r.policy) << r.errors[0].to_string();
  const auto& d = r.policy->model().dlp;
  EXPECT_TRUE(d.present);
  EXPECT_EQ(d.action, policy::model::dlp_action::report);
  EXPECT_EQ(d.max_body_bytes, 64u * 1024);
  EXPECT_TRUE(d.entropy);
  EXPECT_EQ(d.responses, policy::model::response_action::annotate);
  ASSERT_EQ(r.policy->model().blocklist.size(), 1u);
  EXPECT_TRUE(dlp::blocklisted(r.policy->model().blocklist, "a.example.net"));
  EXPECT_TRUE(dlp::blocklisted(r.policy->model().blocklist, "example.net"));
  EXPECT_FALSE(dlp::blocklisted(r.policy->model().blocklist, "badexample.net"));
}

TEST(dlp_policy, UnknownClassIsALoadError) {
  auto r = policy::load_string(
      "dlp: {classes: [iban, no-such-class]}\nagents: {default: {rules: [a]}}\n"
      "rules: [{name: a, hosts: [a.example.com], dlp: {classes: [nope]}}]\n",
      "dlp.yaml");
  EXPECT_FALSE(r.policy);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].key, "dlp.classes[1]");
  EXPECT_EQ(r.errors[0].line, 1);
  EXPECT_NE(r.errors[0].message.find("no-such-class"), std::string::npos);
  EXPECT_EQ(r.errors[1].key, "rules[0].dlp.classes[0]");
  // Custom redactors count as classes.
  auto ok = policy::load_string(
      "redactors: [{name: ticket, pattern: 'TICKET-[0-9]+'}]\ndlp: {classes: [ticket]}\n",
      "dlp.yaml");
  EXPECT_TRUE(ok.policy) << ok.errors[0].to_string();
}

}  // namespace
}  // namespace airlock::filters
