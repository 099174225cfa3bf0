#include "filters/redaction/response_body.hpp"

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/rule_engines.hpp"
#include "policy/loader.hpp"

#include "deflate_text.hpp"

#include <gtest/gtest.h>
#include <boost/beast/http/fields.hpp>

#include <cstdlib>

namespace airlock::filters::redaction {
namespace {

// limits.response_bytes, larger than any body here.
constexpr std::uint64_t kResponseBytes = std::uint64_t{1} << 30;

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

// The plan for a head with these values (empty: no such field).
response_plan plan_for(std::string_view content_type, std::string_view content_encoding) {
  boost::beast::http::fields head;
  if (!content_type.empty()) head.insert(boost::beast::http::field::content_type, content_type);
  if (!content_encoding.empty())
    head.insert(boost::beast::http::field::content_encoding, content_encoding);
  return plan_response(head);
}

std::string run(response_body& body, std::string_view input, std::size_t piece) {
  std::string out;
  for (std::size_t i = 0; i < input.size() && !body.read_enough(); i += piece) {
    std::string chunk;
    EXPECT_TRUE(body.write(input.substr(i, piece), chunk));
    out += chunk;
  }
  std::string tail;
  EXPECT_TRUE(body.finish(tail));
  return out + tail;
}

TEST(ResponsePlan, ByMediaTypeAndCoding) {
  EXPECT_EQ(plan_for("application/json", "").treatment, body_treatment::redact);
  EXPECT_EQ(plan_for("", "").treatment, body_treatment::redact);
  EXPECT_EQ(plan_for("image/png", "br").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_for("image/png", "gzip").treatment, body_treatment::pass);
  EXPECT_EQ(plan_for("image/png", "gzip").coding, content_coding::gzip);
  EXPECT_EQ(plan_for("text/plain", "gzip").coding, content_coding::gzip);
  EXPECT_EQ(plan_for("text/plain", "br").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_for("text/plain", "zstd").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_for("text/plain", "gzip, br").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_for("text/plain; charset=utf-16", "").treatment, body_treatment::refuse);
  EXPECT_EQ(plan_for("text/event-stream", "").media.frame, framing::events);
}

TEST(ResponsePlan, CharsetsTheRedactorsCannotReadAreRefused) {
  for (std::string_view ct :
       {"text/plain; charset=utf-7", "text/html; charset=cp037", "application/json; charset=UTF_16",
        "text/plain; charset=utf-8; charset=utf-16", "text/plain; charset=",
        "text/plain; "
        "charset=iso-2022-jp",
        "application/json; charset=\"ibm500\""})
    EXPECT_EQ(plan_for(ct, "").treatment, body_treatment::refuse) << ct;
  for (std::string_view ct : {"text/plain; charset=UTF-8", "text/html; charset=\"iso-8859-15\"",
                              "text/html; charset=windows-1252", "text/html; charset=Shift_JIS",
                              "application/json; charset=gb18030", "image/png; charset=utf-16"})
    EXPECT_NE(plan_for(ct, "").treatment, body_treatment::refuse) << ct;
}

TEST(ResponsePlan, EveryFieldLineCounts) {
  // Content-Encoding is a list: two lines are one value (RFC 9110 section 5.3).
  boost::beast::http::fields two_codings;
  two_codings.insert(boost::beast::http::field::content_encoding, "identity");
  two_codings.insert(boost::beast::http::field::content_encoding, "gzip");
  EXPECT_EQ(plan_response(two_codings).coding, content_coding::gzip);
  two_codings.insert(boost::beast::http::field::content_encoding, "gzip");
  EXPECT_EQ(plan_response(two_codings).treatment, body_treatment::refuse);
  // Content-Type is a singleton: two lines are refused, whichever a client would take.
  boost::beast::http::fields two_types;
  two_types.insert(boost::beast::http::field::content_type, "image/png");
  two_types.insert(boost::beast::http::field::content_type, "text/plain");
  const auto plan = plan_response(two_types);
  EXPECT_EQ(plan.treatment, body_treatment::refuse);
  EXPECT_EQ(plan.why, "several Content-Type fields");
  // A refusal names only a registered coding, never the origin's free text.
  EXPECT_EQ(plan_for("text/plain", "x-" + std::string(kSecret)).why,
            "Content-Encoding an unknown or stacked coding");
}

TEST(ResponseBody, TextInUtf16OrUtf32FailsWhateverItsLabel) {
  const std::string bom_le = "\xFF\xFE" + std::string("k\0e\0y\0", 6);
  const std::string nul_be = std::string("\0{\0\"\0k", 7);
  for (const std::string& text : {bom_le, nul_be, std::string("\xFE\xFF\0a", 4)}) {
    for (std::size_t piece : {1u, 2u, 64u}) {
      response_body body(secret_engine(), plan_for("application/json", ""), 1 << 20, "",
                         kResponseBytes);
      bool ok = true;
      std::string out;
      for (std::size_t i = 0; ok && i < text.size(); i += piece)
        ok = body.write(std::string_view(text).substr(i, piece), out);
      if (ok) ok = body.finish(out);
      EXPECT_FALSE(ok) << piece;
    }
  }
  // A UTF-8 byte-order mark is UTF-8.
  response_body body(secret_engine(), plan_for("text/plain", ""), 1 << 20, "", kResponseBytes);
  EXPECT_EQ(run(body, "\xEF\xBB\xBFplain", 1), "\xEF\xBB\xBFplain");
}

TEST(ResponseBody, IdentityAtEverySplit) {
  const std::string input = "{\"key\": \"" + std::string(kSecret) + "\", \"who\": \"a@b.example\"}";
  const std::string want = secret_engine()->redact(input);
  ASSERT_EQ(want.find(kSecret), std::string::npos);
  for (std::size_t piece = 1; piece <= input.size(); ++piece) {
    response_body body(secret_engine(), plan_for("application/json", ""), 1 << 20, "",
                       kResponseBytes);
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
    response_body body(secret_engine(), plan_for("text/plain", "gzip"), 1 << 30, "",
                       kResponseBytes);
    const std::string out = run(body, compressed, piece);
    const std::string text = gunzip(out);
    EXPECT_EQ(text, secret_engine()->redact(input));
    EXPECT_EQ(text.find(kSecret), std::string::npos);
  }
}

TEST(ResponseBody, CorruptOrTruncatedGzipFailsClosed) {
  const std::string compressed = gzip(std::string(10000, 'x'));
  {
    response_body body(secret_engine(), plan_for("text/plain", "gzip"), 1 << 30, "",
                       kResponseBytes);
    std::string out;
    EXPECT_TRUE(body.write(compressed.substr(0, compressed.size() / 2), out));
    EXPECT_FALSE(body.finish(out));
    EXPECT_NE(body.error(), nullptr);
  }
  {
    response_body body(secret_engine(), plan_for("text/plain", "gzip"), 1 << 30, "",
                       kResponseBytes);
    std::string out;
    EXPECT_FALSE(body.write("this is not gzip at all", out));
  }
}

TEST(ResponseBody, CutOffAtTheLimitWithAMarker) {
  std::string input(100000, 'a');
  response_body body(secret_engine(), plan_for("text/plain", ""), 1000, "\n[cut]\n",
                     kResponseBytes);
  const std::string out = run(body, input, 300);
  EXPECT_TRUE(body.cut_off());
  EXPECT_EQ(out, std::string(1000, 'a') + "\n[cut]\n");
  // Read past the cut: as much as the stream may hold back, no more.
  EXPECT_EQ(body.decoded_bytes(), 1000u + body.redaction().retention_bound());
}

TEST(ResponseBody, ABodyJustPastTheLimitIsCutToo) {
  response_body body(secret_engine(), plan_for("text/plain", ""), 1000, "[cut]", kResponseBytes);
  EXPECT_EQ(run(body, std::string(1001, 'b'), 64), std::string(1000, 'b') + "[cut]");
  EXPECT_TRUE(body.cut_off());
  EXPECT_FALSE(body.read_enough());
  response_body exact(secret_engine(), plan_for("text/plain", ""), 1000, "[cut]", kResponseBytes);
  EXPECT_EQ(run(exact, std::string(1000, 'b'), 64), std::string(1000, 'b'));
  EXPECT_FALSE(exact.cut_off());
}

TEST(ResponseBody, ACutThroughASecretReleasesNoPartOfIt) {
  // The cut falls inside the secret: its first part matches nothing, and must not go out.
  const std::string input = std::string(5000, 'a') + ' ' + std::string(kSecret) + " tail";
  for (std::size_t cut = 5001; cut < 5001 + kSecret.size(); cut += 5) {
    for (std::size_t piece : {7u, 300u, 100000u}) {
      response_body body(secret_engine(), plan_for("text/plain", ""), cut, "[cut]", kResponseBytes);
      const std::string out = run(body, input, piece);
      EXPECT_TRUE(out.ends_with("[cut]"));
      EXPECT_EQ(out.find(kSecret.substr(0, 4)), std::string::npos) << cut << " " << piece;
    }
  }
}

TEST(ResponseBody, EventsAreReleasedAsTheyComplete) {
  response_body body(secret_engine(), plan_for("text/event-stream", ""), 1 << 20, "",
                     kResponseBytes);
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
  response_body body(secret_engine(), plan_for("text/event-stream", "gzip"), 1 << 20, "",
                     kResponseBytes);
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
  const auto plan = plan_for("image/png", "");
  ASSERT_EQ(plan.treatment, body_treatment::pass);
  for (std::size_t piece : {1u, 13u, 4096u}) {
    response_body body(literals.compiled, plan, 0, "", kResponseBytes);
    EXPECT_TRUE(body.guarding());
    EXPECT_EQ(run(body, binary, piece), binary);
  }
  // The secret inside: the body fails and no byte of the secret is released.
  {
    const std::string carrying = binary.substr(0, 3000) + std::string(kSecret) + binary;
    for (std::size_t piece : {1u, 100u, 4096u}) {
      response_body body(literals.compiled, plan, 0, "", kResponseBytes);
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

TEST(ResponseBody, ACutAfterShrinkingRedactionsReleasesNoPartOfAValue) {
  // Redactions before the cut make the output shorter than the text, so what the stream held
  // at the reading limit lands inside max_bytes of output: it must not be flushed.
  constexpr std::uint64_t kMax = 60000;
  const std::size_t hold =
      response_body(secret_engine(), plan_for("text/plain", ""), kMax, "", kResponseBytes)
          .redaction()
          .retention_bound();
  std::string input;
  while (input.size() < 56000)  // each redaction 14 bytes shorter: more than the hold-back
    input += std::string(kSecret) + " ";
  ASSERT_GT((input.size() / (kSecret.size() + 1)) * 14, hold);
  input.resize(kMax + hold - 10, 'a');
  input += " " + std::string(kSecret) + " and more text after it";
  for (std::size_t piece : {512u, 65536u}) {
    response_body body(secret_engine(), plan_for("text/plain", ""), kMax, "[cut]", kResponseBytes);
    const std::string out = run(body, input, piece);
    EXPECT_TRUE(out.ends_with("[cut]"));
    EXPECT_EQ(out.find(kSecret.substr(0, 6)), std::string::npos) << piece;
  }
}

TEST(ResponseBody, BinaryInGzipIsGuardedDecoded) {
  auto literals = engine::build({}, {{"api", std::string(kSecret)}});
  ASSERT_TRUE(literals.errors.empty());
  const auto plan = plan_for("application/octet-stream", "gzip");
  const std::string clean = std::string("\x01\x02 binary ") + std::string(3000, '\x7f');
  {
    response_body body(literals.compiled, plan, 0, "", kResponseBytes);
    EXPECT_EQ(gunzip(run(body, gzip(clean), 100)), clean);
  }
  const std::string coded = gzip(clean + std::string(kSecret) + clean);
  for (std::size_t piece : {1u, 100u, 100000u}) {
    response_body body(literals.compiled, plan, 0, "", kResponseBytes);
    std::string released;
    bool ok = true;
    for (std::size_t i = 0; ok && i < coded.size(); i += piece)
      ok = body.write(std::string_view(coded).substr(i, piece), released);
    if (ok) ok = body.finish(released);
    EXPECT_FALSE(ok) << piece;
  }
}

// A gRPC length-prefixed message (flag 0, big-endian length).
std::string grpc_message(std::string_view payload) {
  std::string m(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8)
    m += static_cast<char>((payload.size() >> shift) & 0xff);
  return m.append(payload);
}

TEST(ResponsePlan, GrpcTypesAreBinaryAndFramed) {
  for (std::string_view ct :
       {"application/grpc", "Application/GRPC+proto", "application/grpc+json",
        "application/grpc-web", "application/grpc-web+proto; x=1", "application/connect+json"}) {
    const auto plan = plan_for(ct, "");
    EXPECT_EQ(plan.treatment, body_treatment::pass) << ct;
    EXPECT_TRUE(plan.media.grpc) << ct;
  }
  for (std::string_view ct :
       {"application/grpc-web-text", "application/grpcx", "application/connect+",
        "application/octet-stream", "application/json"})
    EXPECT_FALSE(plan_for(ct, "").media.grpc) << ct;
}

TEST(ResponseBody, GrpcMessagesPassUnchanged) {
  auto literals = engine::build({}, {{"api", std::string(kSecret)}});
  ASSERT_TRUE(literals.errors.empty());
  const std::string body_bytes = grpc_message("\x0a\x05hello") + grpc_message("") +
                                 grpc_message(std::string(70000, '\x7f')) +
                                 grpc_message("sk-live-RESPONSE") + grpc_message("BODY");
  for (std::size_t piece : {1u, 2u, 5u, 6u, 4096u, 100000u}) {
    response_body body(literals.compiled, plan_for("application/grpc", ""), 0, "", kResponseBytes);
    EXPECT_EQ(run(body, body_bytes, piece), body_bytes) << piece;
  }
}

TEST(ResponseBody, ASecretSplitAcrossGrpcMessagesFails) {
  // A client reading the call's messages can join them: the guard reads the payloads joined.
  auto literals = engine::build({}, {{"api", std::string(kSecret)}});
  ASSERT_TRUE(literals.errors.empty());
  for (std::size_t cut : {std::size_t{1}, std::size_t{10}, kSecret.size() - 1}) {
    const std::string split =
        grpc_message(std::string("\x0a\x20 field ") + std::string(kSecret.substr(0, cut))) +
        grpc_message("") + grpc_message(std::string(kSecret.substr(cut)) + " rest");
    for (std::string_view ct : {"application/grpc", "application/grpc-web+proto"}) {
      for (std::size_t piece : {1u, 3u, 7u, 4096u}) {
        response_body body(literals.compiled, plan_for(ct, ""), 0, "", kResponseBytes);
        std::string released;
        bool ok = true;
        for (std::size_t i = 0; ok && i < split.size(); i += piece)
          ok = body.write(std::string_view(split).substr(i, piece), released);
        if (ok) ok = body.finish(released);
        EXPECT_FALSE(ok) << ct << " cut " << cut << " piece " << piece;
        EXPECT_TRUE(body.unredactable());
        EXPECT_EQ(released.find(kSecret.substr(0, std::max<std::size_t>(cut, 1))),
                  std::string::npos)
            << ct << " cut " << cut << " piece " << piece;
      }
    }
    // The same bytes labelled as a plain octet stream are not gRPC to any client: the five
    // bytes between the halves keep them apart there.
    response_body other(literals.compiled, plan_for("application/octet-stream", ""), 0, "",
                        kResponseBytes);
    EXPECT_EQ(run(other, split, 4096), split);
  }
}

TEST(ResponseBody, AGrpcBodyIsAlsoReadAsItCame) {
  // A reader that is no gRPC client (curl) reads the bytes as they came: a value whose first
  // byte is a prefix's length byte, or that runs into a trailing partial prefix, is there.
  auto literals = engine::build({}, {{"api", std::string(kSecret)}});
  ASSERT_TRUE(literals.errors.empty());
  const auto first = static_cast<unsigned char>(kSecret[0]);  // 's': a length of 115
  std::string payload = std::string(kSecret.substr(1));
  payload.resize(first, '.');
  const std::string in_prefix = std::string(4, '\0') + kSecret[0] + payload;
  // A message, then bytes that frame as a prefix and one payload byte of a message cut short.
  const std::string at_end = grpc_message("ok") + std::string(kSecret.substr(0, 4)) + '\0' + 'z';
  for (const std::string& body : {in_prefix, grpc_message("ok") + std::string(kSecret)}) {
    for (std::size_t piece : {1u, 7u, 4096u}) {
      response_body b(literals.compiled, plan_for("application/grpc", ""), 0, "", kResponseBytes);
      std::string released;
      bool ok = true;
      for (std::size_t i = 0; ok && i < body.size(); i += piece)
        ok = b.write(std::string_view(body).substr(i, piece), released);
      if (ok) ok = b.finish(released);
      EXPECT_FALSE(ok) << piece;
      EXPECT_EQ(released.find(kSecret.substr(1, 10)), std::string::npos) << piece;
    }
  }
  // Neither reading finds anything: the body passes as it came, a message cut short included.
  for (std::size_t piece : {1u, 3u, 4096u}) {
    response_body b(literals.compiled, plan_for("application/grpc", ""), 0, "", kResponseBytes);
    EXPECT_EQ(run(b, at_end, piece), at_end) << piece;
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
