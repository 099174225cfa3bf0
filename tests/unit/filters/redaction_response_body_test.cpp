#include "filters/redaction/response_body.hpp"

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/rule_engines.hpp"
#include "policy/loader.hpp"

#include "deflate_text.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace airlock::filters::redaction {
namespace {

constexpr std::string_view kSecret = "sk-live-RESPONSEBODYTEST-0123456789";

std::shared_ptr<const engine> secret_engine() {
  auto built = engine::build(*builtin_redactor("email"), {{"api", std::string(kSecret)}});
  EXPECT_TRUE(built.errors.empty());
  return built.compiled;
}

std::string gzip(std::string_view text) {
  return test::deflate_text(text);
}

std::string gunzip(std::string_view data) {
  decoder d(content_coding::gzip);
  std::string out;
  for (;;) {
    auto st = d.decode(data, out, 1 << 20);
    if (st != decoder::status::output_full) break;
  }
  EXPECT_TRUE(d.complete());
  return out;
}

std::string run(response_body& body, std::string_view input, std::size_t piece) {
  std::string out;
  for (std::size_t i = 0; i < input.size() && !body.cut_off(); i += piece) {
    std::string chunk;
    EXPECT_TRUE(body.write(input.substr(i, piece), chunk));
    out += chunk;
  }
  std::string tail;
  EXPECT_TRUE(body.finish(tail));
  return out + tail;
}

TEST(ResponsePlan, ByMediaTypeAndCoding) {
  EXPECT_EQ(plan_response("application/json", "").treatment, body_treatment::redact);
  EXPECT_EQ(plan_response("", "").treatment, body_treatment::redact);
  EXPECT_EQ(plan_response("image/png", "br").treatment, body_treatment::pass);
  EXPECT_EQ(plan_response("text/plain", "gzip").coding, content_coding::gzip);
  EXPECT_EQ(plan_response("text/plain", "br").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_response("text/plain", "zstd").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_response("text/plain", "gzip, br").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_response("text/plain; charset=utf-16", "").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_response("text/event-stream", "").media.frame, framing::events);
}

TEST(ResponseBody, IdentityAtEverySplit) {
  const std::string input = "{\"key\": \"" + std::string(kSecret) + "\", \"who\": \"a@b.example\"}";
  const std::string want = secret_engine()->redact(input);
  ASSERT_EQ(want.find(kSecret), std::string::npos);
  for (std::size_t piece = 1; piece <= input.size(); ++piece) {
    response_body body(secret_engine(), plan_response("application/json", ""), 1 << 20, "");
    EXPECT_EQ(run(body, input, piece), want) << "piece " << piece;
    EXPECT_EQ(body.redaction().redactions(), 2u);
  }
}

TEST(ResponseBody, GzipIsDecodedRedactedAndEncodedAgain) {
  std::string input;
  for (int i = 0; i < 2000; ++i)
    input += "line " + std::to_string(i) + " " + std::string(kSecret) + "\n";
  const std::string compressed = gzip(input);
  for (std::size_t piece : {7u, 100u, 4096u}) {
    response_body body(secret_engine(), plan_response("text/plain", "gzip"), 1 << 30, "");
    const std::string out = run(body, compressed, piece);
    const std::string text = gunzip(out);
    EXPECT_EQ(text, secret_engine()->redact(input));
    EXPECT_EQ(text.find(kSecret), std::string::npos);
  }
}

TEST(ResponseBody, CorruptOrTruncatedGzipFailsClosed) {
  const std::string compressed = gzip(std::string(10000, 'x'));
  {
    response_body body(secret_engine(), plan_response("text/plain", "gzip"), 1 << 30, "");
    std::string out;
    EXPECT_TRUE(body.write(compressed.substr(0, compressed.size() / 2), out));
    EXPECT_FALSE(body.finish(out));
    EXPECT_NE(body.error(), nullptr);
  }
  {
    response_body body(secret_engine(), plan_response("text/plain", "gzip"), 1 << 30, "");
    std::string out;
    EXPECT_FALSE(body.write("this is not gzip at all", out));
  }
}

TEST(ResponseBody, CutOffAtTheLimitWithAMarker) {
  std::string input(10000, 'a');
  response_body body(secret_engine(), plan_response("text/plain", ""), 1000, "\n[cut]\n");
  const std::string out = run(body, input, 300);
  EXPECT_TRUE(body.cut_off());
  EXPECT_EQ(out, std::string(1000, 'a') + "\n[cut]\n");
  EXPECT_EQ(body.decoded_bytes(), 1000u);
}

TEST(ResponseBody, EventsAreReleasedAsTheyComplete) {
  response_body body(secret_engine(), plan_response("text/event-stream", ""), 1 << 20, "");
  std::string out;
  ASSERT_TRUE(body.write("data: " + std::string(kSecret) + "\n\n", out));
  EXPECT_EQ(out, "data: [REDACTED:secret:api]\n\n");
  out.clear();
  ASSERT_TRUE(body.write("data: two", out));
  std::string tail;
  ASSERT_TRUE(body.finish(tail));
  EXPECT_EQ(out + tail, "data: two");
}

TEST(ResponseBody, GzipEventsAreFlushedPerEvent) {
  response_body body(secret_engine(), plan_response("text/event-stream", "gzip"), 1 << 20, "");
  const std::string compressed = gzip("data: " + std::string(kSecret) + "\n\ndata: 2\n\n");
  // Only the first event's compressed bytes... feed everything but the trailer and check the
  // client can decode the first event already.
  std::string out;
  ASSERT_TRUE(body.write(compressed.substr(0, compressed.size() - 8), out));
  decoder d(content_coding::gzip);
  std::string_view in = out;
  std::string text;
  d.decode(in, text, 1 << 20);
  EXPECT_EQ(text.rfind("data: [REDACTED:secret:api]\n\n", 0), 0u) << text;
}

TEST(ResponseBody, BinaryPassesUnchangedUnlessItCarriesASecret) {
  auto literals = engine::build({}, {{"api", std::string(kSecret)}});
  ASSERT_TRUE(literals.errors.empty());
  std::string binary;
  for (int i = 0; i < 5000; ++i)
    binary += static_cast<char>((i * 7919) & 0xff);
  const auto plan = plan_response("image/png", "");
  ASSERT_EQ(plan.treatment, body_treatment::pass);
  for (std::size_t piece : {1u, 13u, 4096u}) {
    response_body body(literals.compiled, plan, 0, "");
    EXPECT_TRUE(body.guarding());
    EXPECT_EQ(run(body, binary, piece), binary);
  }
  // The secret inside: the body fails and no byte of the secret is released.
  {
    const std::string carrying = binary.substr(0, 3000) + std::string(kSecret) + binary;
    for (std::size_t piece : {1u, 100u, 4096u}) {
      response_body body(literals.compiled, plan, 0, "");
      std::string released;
      bool ok = true;
      for (std::size_t i = 0; ok && i < carrying.size(); i += piece) {
        std::string chunk;
        ok = body.write(std::string_view(carrying).substr(i, piece), chunk);
        released += chunk;
      }
      if (ok) ok = body.finish(released);
      EXPECT_FALSE(ok) << piece;
      EXPECT_NE(body.error(), nullptr);
      EXPECT_EQ(released.find(kSecret.substr(0, 12)), std::string::npos) << piece;
    }
  }
}

TEST(RuleEngines, EveryRedactingRuleRedactsEverySecretAndBasicForm) {
  ::setenv("AIRLOCK_TEST_RE_A", "first-secret-value-aaaa", 1);
  ::setenv("AIRLOCK_TEST_RE_B", "second-secret-value-bbbb", 1);
  auto r = policy::load_string(R"(
listen: {proxy: 127.0.0.1:0, admin: ''}
secrets:
  a: {env: AIRLOCK_TEST_RE_A}
  b: {env: AIRLOCK_TEST_RE_B}
agents:
  default: {rules: [plain, injects, redacts]}
rules:
  - {name: plain, hosts: [plain.example], ports: [80]}
  - name: injects
    hosts: [inj.example]
    ports: [80]
    inject: {basic: {username: u, password: '${secrets.a}'}}
  - {name: redacts, hosts: [red.example], ports: [80], redact: [email]}
)",
                               "test.yaml");
  for (const auto& e : r.errors)
    ADD_FAILURE() << e.to_string();
  ASSERT_TRUE(r.policy);
  auto built = rule_engines::build(*r.policy);
  ASSERT_TRUE(built.errors.empty());
  const auto& engines = *built.engines;
  EXPECT_EQ(engines.for_rule(0), nullptr);
  ASSERT_NE(engines.for_rule(1), nullptr);
  ASSERT_NE(engines.for_rule(2), nullptr);
  ASSERT_NE(engines.secrets_only(), nullptr);
  const std::string text = "first-secret-value-aaaa second-secret-value-bbbb x@y.example";
  EXPECT_EQ(engines.for_rule(2)->redact(text),
            "[REDACTED:secret:a] [REDACTED:secret:b] [REDACTED:email]");
  EXPECT_EQ(engines.for_rule(1)->redact(text),
            "[REDACTED:secret:a] [REDACTED:secret:b] x@y.example");
  // base64("u:first-secret-value-aaaa")
  EXPECT_EQ(engines.for_rule(1)->redact("Basic dTpmaXJzdC1zZWNyZXQtdmFsdWUtYWFhYQ=="),
            "Basic [REDACTED:secret:a]");
  ASSERT_NE(engines.for_binary(1), nullptr);
  EXPECT_EQ(engines.for_binary(0), nullptr);
  EXPECT_EQ(engines.for_binary(1)->redact("Basic dTpmaXJzdC1zZWNyZXQtdmFsdWUtYWFhYQ== x@y.example"),
            "Basic [REDACTED:secret:a] x@y.example");
  EXPECT_EQ(engines.secrets_only()->redact(text),
            "[REDACTED:secret:a] [REDACTED:secret:b] x@y.example");
}

}  // namespace
}  // namespace airlock::filters::redaction
