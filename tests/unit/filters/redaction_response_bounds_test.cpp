#include "filters/redaction/response_body.hpp"

#include "deflate_text.hpp"

#include <gtest/gtest.h>
#include <boost/beast/http/fields.hpp>

#include <cstdint>
#include <random>
#include <string>

// A body decoded under redaction is bounded by limits.response_bytes as a response is: a small
// gzip body that inflates past it (a decompression bomb) is decoded no further than that, and
// what the client gets, encoded again, never passes it.
namespace airlock::filters::redaction {
namespace {

constexpr std::string_view kSecret = "sk-live-RESPONSEBOUNDSTEST-0123456789";
constexpr std::uint64_t kLimit = 1 << 20;  // limits.response_bytes
constexpr std::size_t kDecodeStep = 64 * 1024;

std::shared_ptr<const engine> literals() {
  auto built = engine::build({}, {{"api", std::string(kSecret)}});
  EXPECT_TRUE(built.errors.empty());
  return built.compiled;
}

response_plan plan_for(std::string_view content_type, std::string_view content_encoding) {
  boost::beast::http::fields head;
  head.insert(boost::beast::http::field::content_type, content_type);
  head.insert(boost::beast::http::field::content_encoding, content_encoding);
  return plan_response(head);
}

struct outcome {
  bool ok = true;
  std::string released;  // what write() and finish() gave to the client
};

outcome feed(response_body& body, std::string_view coded, std::size_t piece) {
  outcome o;
  for (std::size_t i = 0; o.ok && i < coded.size() && !body.read_enough(); i += piece) {
    std::string chunk;
    o.ok = body.write(coded.substr(i, piece), chunk);
    if (o.ok) o.released += chunk;
  }
  if (o.ok) {
    std::string tail;
    o.ok = body.finish(tail);
    if (o.ok) o.released += tail;
  }
  return o;
}

TEST(ResponseBounds, AGuardedBinaryBombIsDecodedNoFurtherThanResponseBytes) {
  // 64 MiB of zeros in about 64 KiB of gzip: far under kLimit on the wire.
  const std::string coded = test::deflate_text(std::string(64 << 20, '\0'));
  ASSERT_LT(coded.size(), kLimit);
  const auto plan = plan_for("application/octet-stream", "gzip");
  ASSERT_EQ(plan.treatment, body_treatment::pass);
  for (std::size_t piece : {4096u, 65536u, 1u << 20}) {
    response_body body(literals(), plan, 0, "", kLimit);
    const auto o = feed(body, coded, piece);
    EXPECT_FALSE(o.ok) << piece;
    EXPECT_TRUE(body.too_large()) << piece;
    EXPECT_FALSE(body.unredactable()) << piece;
    ASSERT_NE(body.error(), nullptr) << piece;
    EXPECT_NE(std::string_view(body.error()).find("limits.response_bytes"), std::string_view::npos);
    EXPECT_LE(body.decoded_bytes(), kLimit + kDecodeStep) << piece;
    EXPECT_LE(o.released.size(), kLimit) << piece;
  }
}

TEST(ResponseBounds, AGuardedBinaryWithinResponseBytesPassesWhole) {
  const std::string zeros(kLimit, '\0');
  const auto plan = plan_for("application/octet-stream", "gzip");
  response_body body(literals(), plan, 0, "", kLimit);
  const auto o = feed(body, test::deflate_text(zeros), 4096);
  EXPECT_TRUE(o.ok) << body.error();
  EXPECT_EQ(body.decoded_bytes(), kLimit);
}

TEST(ResponseBounds, OutputEncodedAgainPastResponseBytesFails) {
  // Random bytes do not compress: encoded again, they come out a little larger than they went
  // in, so a body of exactly kLimit decoded bytes would reach the client past kLimit.
  std::mt19937 gen(7);
  std::string noise(kLimit, '\0');
  for (auto& c : noise)
    c = static_cast<char>(gen());
  const auto plan = plan_for("application/octet-stream", "gzip");
  response_body body(literals(), plan, 0, "", kLimit);
  const auto o = feed(body, test::deflate_text(noise), 65536);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(body.too_large());
  EXPECT_LE(o.released.size(), kLimit);
}

TEST(ResponseBounds, TextIsCutAtResponseBytesWhenTheRuleAllowsMore) {
  const std::string coded = test::deflate_text(std::string(64 << 20, 'a'));
  auto built = engine::build({}, {{"api", std::string(kSecret)}});
  for (std::size_t piece : {4096u, 1u << 20}) {
    response_body body(built.compiled, plan_for("text/plain", "gzip"), std::uint64_t{1} << 40,
                       "[cut]", kLimit);
    const auto o = feed(body, coded, piece);
    EXPECT_TRUE(o.ok) << body.error();
    EXPECT_TRUE(body.cut_off());
    EXPECT_LE(body.decoded_bytes(), kLimit + body.redaction().retention_bound() + kDecodeStep);
    EXPECT_LE(o.released.size(), kLimit);
  }
}

}  // namespace
}  // namespace airlock::filters::redaction
