#include "filters/redaction/content_type.hpp"

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/decoder.hpp"
#include "filters/redaction/encoder.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/stream.hpp"

#include "deflate_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace airlock::filters::redaction {
namespace {

TEST(RedactionContent, TextLikeMediaTypes) {
  for (const char* t :
       {"application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain",
        "text/html;charset=ISO-8859-1", "text/csv", "application/xml", "text/xml",
        "application/atom+xml", "image/svg+xml", "application/problem+json",
        "application/vnd.github+json", "application/javascript", "text/javascript",
        "application/x-www-form-urlencoded", "application/yaml", " application/json ", ""}) {
    const body_class c = classify_content_type(t);
    EXPECT_EQ(c.kind, body_kind::text) << t;
    EXPECT_EQ(c.frame, framing::none) << t;
  }
  EXPECT_EQ(classify_content_type("text/event-stream").frame, framing::events);
  EXPECT_EQ(classify_content_type("text/event-stream; charset=utf-8").kind, body_kind::text);
  EXPECT_EQ(classify_content_type("application/x-ndjson").frame, framing::lines);
  EXPECT_EQ(classify_content_type("application/jsonl").frame, framing::lines);
}

TEST(RedactionContent, BinaryAndUnsupported) {
  for (const char* t : {"image/png", "application/octet-stream", "application/zip",
                        "application/pdf", "video/mp4", "multipart/form-data; boundary=x",
                        "application/grpc", "application/x-protobuf", "font/woff2"})
    EXPECT_EQ(classify_content_type(t).kind, body_kind::binary) << t;
  for (const char* t : {"text/plain; charset=utf-16", "application/json; charset=\"UTF-16LE\"",
                        "text/html; foo=bar; charset=utf-32"})
    EXPECT_EQ(classify_content_type(t).kind, body_kind::unsupported) << t;
}

TEST(RedactionContent, ContentEncodingParsing) {
  EXPECT_EQ(parse_content_encoding(""), content_coding::identity);
  EXPECT_EQ(parse_content_encoding("identity"), content_coding::identity);
  EXPECT_EQ(parse_content_encoding("gzip"), content_coding::gzip);
  EXPECT_EQ(parse_content_encoding("GZip"), content_coding::gzip);
  EXPECT_EQ(parse_content_encoding("x-gzip"), content_coding::gzip);
  EXPECT_EQ(parse_content_encoding(" deflate "), content_coding::deflate);
  EXPECT_EQ(parse_content_encoding("identity, gzip"), content_coding::gzip);
  for (const char* v : {"br", "zstd", "compress", "x-compress", "gzip, br", "gzip, gzip",
                        "deflate, gzip", "exotic", "gzip;q=1"})
    EXPECT_EQ(parse_content_encoding(v), content_coding::unsupported) << v;
  EXPECT_EQ(to_string(content_coding::gzip), "gzip");
  EXPECT_EQ(to_string(content_coding::unsupported), "unsupported");
}

std::string sample_json(std::size_t n) {
  std::string s = "[";
  std::mt19937 rng(5);
  for (int i = 0; s.size() < n; ++i)
    s += "{\"id\":" + std::to_string(rng() % 100000) + ",\"mail\":\"u" + std::to_string(i) +
         "@example.com\",\"key\":\"" + (i % 50 == 0 ? "AKIAIOSFODNN7EXAMPLE" : "none") + "\"},";
  return s + "{}]";
}

std::string compress_with(std::string_view in, int window_bits) {
  return test::deflate_text(in, window_bits);
}

struct decoded {
  std::string text;
  decoder::status last = decoder::status::need_input;
  bool complete = false;
  std::size_t biggest_step = 0;
  std::uint64_t trailing = 0;
};

// Feeds `data` in chunks of `chunk`, asking for at most `max_out` per step.
decoded decode_all(content_coding c, std::string_view data, std::size_t chunk,
                   std::size_t max_out) {
  decoder d(c);
  decoded r;
  std::string out;
  for (std::size_t p = 0; p < data.size() || p == 0; p += chunk) {
    std::string_view in = data.substr(p, chunk);
    for (;;) {
      r.last = d.decode(in, out, max_out);
      r.biggest_step = std::max(r.biggest_step, out.size());
      r.text += out;
      out.clear();
      if (r.last != decoder::status::output_full) break;
    }
    if (r.last == decoder::status::error) break;
    EXPECT_TRUE(in.empty());
    if (data.empty()) break;
  }
  r.complete = d.complete();
  r.trailing = d.trailing_bytes();
  EXPECT_EQ(d.total_out(), r.text.size());
  return r;
}

TEST(RedactionContent, DecodesGzipZlibAndRawDeflateInAnyChunking) {
  const std::string plain = sample_json(200000);
  const struct {
    content_coding coding;
    int bits;
  } cases[] = {{content_coding::gzip, 31},
               {content_coding::gzip, 15},  // zlib data labelled gzip
               {content_coding::deflate, 15},
               {content_coding::deflate, -15}};  // raw deflate labelled deflate
  for (auto [coding, bits] : cases) {
    const std::string z = compress_with(plain, bits);
    for (std::size_t chunk :
         {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{1000}, z.size()}) {
      if (chunk == 1 && z.size() > 20000) {
        // one byte at a time over the first part only (keeps the test fast)
        auto r = decode_all(coding, std::string_view(z).substr(0, 20000), 1, 777);
        EXPECT_EQ(r.last, decoder::status::need_input);
        EXPECT_EQ(plain.compare(0, r.text.size(), r.text), 0);
        continue;
      }
      auto r = decode_all(coding, z, chunk, 4096);
      EXPECT_EQ(r.last, decoder::status::done) << bits << " " << chunk;
      EXPECT_TRUE(r.complete);
      EXPECT_EQ(r.text, plain) << bits << " " << chunk;
      EXPECT_LE(r.biggest_step, 4096u);
    }
  }
}

TEST(RedactionContent, GzipMembersTrailingGarbageTruncationCorruption) {
  const std::string a = "first member ", b = "second member";
  const std::string two = compress_with(a, 31) + compress_with(b, 31);
  for (std::size_t chunk : {1, 5, 1000}) {
    auto r = decode_all(content_coding::gzip, two, chunk, 64);
    EXPECT_EQ(r.text, a + b);
    EXPECT_TRUE(r.complete);
  }
  auto g =
      decode_all(content_coding::gzip, compress_with(a, 31) + std::string("\0\0garbage", 9), 3, 64);
  EXPECT_EQ(g.text, a);
  EXPECT_EQ(g.last, decoder::status::done);
  EXPECT_EQ(g.trailing, 9u);

  const std::string z = compress_with(sample_json(5000), 31);
  auto t = decode_all(content_coding::gzip, std::string_view(z).substr(0, z.size() / 2), 100, 512);
  EXPECT_FALSE(t.complete);  // truncated: the caller must not treat the body as whole

  std::string bad = z;
  for (std::size_t i = 20; i < 60; ++i)
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  auto c = decode_all(content_coding::gzip, bad, 100, 512);
  EXPECT_EQ(c.last, decoder::status::error);

  decoder u(content_coding::unsupported);
  std::string_view in = "abc";
  std::string out;
  EXPECT_EQ(u.decode(in, out, 10), decoder::status::error);
  EXPECT_STREQ(u.error(), "unsupported content coding");
}

TEST(RedactionContent, DecompressionBombOutputIsBoundedPerStep) {
  const std::string zeros(64 << 20, '\0');
  const std::string z = compress_with(zeros, 31);
  ASSERT_LT(z.size(), 100000u);
  decoder d(content_coding::gzip);
  std::string_view in = z;
  std::string out;
  const std::uint64_t limit = 10 << 20;  // what a caller would enforce
  std::size_t steps = 0;
  while (d.total_out() <= limit) {
    const auto st = d.decode(in, out, 64 * 1024);
    ASSERT_LE(out.size(), 64u * 1024);
    out.clear();
    ++steps;
    ASSERT_NE(st, decoder::status::error);
    if (st == decoder::status::done) break;
  }
  EXPECT_GT(d.total_out(), limit);
  EXPECT_LT(d.total_out(), limit + 64 * 1024 + 1);
  EXPECT_LT(d.total_in(), z.size());  // stopped long before the end of the input
  EXPECT_GT(steps, 160u);
}

TEST(RedactionContent, GzipRoundTripThroughDecodeRedactEncode) {
  auto built = engine::build(all_builtin_redactors(), {});
  ASSERT_TRUE(built.errors.empty());
  const std::string plain = sample_json(300000);
  const std::string expected = built.compiled->redact(plain);
  ASSERT_NE(expected, plain);
  const std::string gz = compress_with(plain, 31);

  decoder dec(content_coding::gzip);
  stream red(built.compiled);
  encoder enc(content_coding::gzip);
  ASSERT_TRUE(enc.ok());
  std::string decoded, redacted, encoded;
  for (std::size_t p = 0; p < gz.size(); p += 1500) {
    std::string_view in = std::string_view(gz).substr(p, 1500);
    for (;;) {
      const auto st = dec.decode(in, decoded, 16 * 1024);
      ASSERT_NE(st, decoder::status::error);
      red.write(decoded, redacted);
      decoded.clear();
      enc.write(redacted, encoded);
      redacted.clear();
      if (st != decoder::status::output_full) break;
    }
  }
  ASSERT_TRUE(dec.complete());
  red.finish(redacted);
  enc.write(redacted, encoded);
  enc.finish(encoded);

  auto back = decode_all(content_coding::gzip, encoded, 4096, 65536);
  EXPECT_TRUE(back.complete);
  EXPECT_EQ(back.text, expected);
  EXPECT_EQ(encoded.substr(0, 2), "\x1f\x8b");  // a gzip header, as Content-Encoding says
}

TEST(RedactionContent, EncoderFlushMakesEverythingSoFarDecodable) {
  for (content_coding c : {content_coding::gzip, content_coding::deflate}) {
    encoder enc(c, 6);
    ASSERT_TRUE(enc.ok());
    std::string encoded;
    enc.write("data: first event\n\n", encoded);
    enc.flush(encoded);
    auto partial = decode_all(c, encoded, 7, 100);
    EXPECT_EQ(partial.text, "data: first event\n\n");
    EXPECT_FALSE(partial.complete);
    enc.write("data: second\n\n", encoded);
    enc.finish(encoded);
    enc.write("ignored after finish", encoded);
    auto all = decode_all(c, encoded, 7, 100);
    EXPECT_EQ(all.text, "data: first event\n\ndata: second\n\n");
    EXPECT_TRUE(all.complete);
  }
  encoder none(content_coding::identity);
  EXPECT_FALSE(none.ok());
  std::string out;
  none.write("x", out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace airlock::filters::redaction
