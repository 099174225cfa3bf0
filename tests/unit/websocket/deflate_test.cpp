#include "websocket/deflate.hpp"

#include "websocket/message_reader.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace airlock::websocket {
namespace {

// What a permessage-deflate sender puts in a message: raw deflate, sync-flushed, the
// 0x00 0x00 0xff 0xff tail removed (RFC 7692 section 7.2.1). `z` keeps its context.
std::string compress(z_stream& z, std::string_view text) {
  std::string out(text.size() + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  out.resize(out.size() - z.avail_out);
  EXPECT_TRUE(out.ends_with(std::string("\0\0\xff\xff", 4)));
  out.resize(out.size() - 4);
  return out;
}

struct deflater {
  z_stream z{};
  deflater() { deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY); }
  ~deflater() { deflateEnd(&z); }
};

std::string compressed_frame(std::string_view body, bool fin = true) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | 0x40 | 0x01));  // RSV1, text
  out.push_back(static_cast<char>(body.size() < 126 ? body.size() : 126));
  if (body.size() >= 126) {
    out.push_back(static_cast<char>(body.size() >> 8));
    out.push_back(static_cast<char>(body.size()));
  }
  return out + std::string(body);
}

TEST(Deflate, Negotiation) {
  auto n = negotiated("permessage-deflate; server_no_context_takeover; client_max_window_bits=10");
  ASSERT_TRUE(n.ok);
  ASSERT_TRUE(n.deflate);
  EXPECT_TRUE(n.deflate->server_no_context_takeover);
  EXPECT_FALSE(n.deflate->client_no_context_takeover);
  EXPECT_EQ(n.deflate->client_max_window_bits, 10);
  EXPECT_TRUE(negotiated("").ok);
  EXPECT_FALSE(negotiated("").deflate);
  EXPECT_FALSE(negotiated("x-webkit-deflate-frame").ok);
  EXPECT_FALSE(negotiated("permessage-deflate; client_max_window_bits=7").ok);
  EXPECT_FALSE(negotiated("permessage-deflate, permessage-deflate").ok);
  EXPECT_FALSE(negotiated("permessage-deflate; what=1").ok);
  EXPECT_EQ(deflate_offers("x-foo, permessage-deflate; client_max_window_bits, bar"),
            "permessage-deflate; client_max_window_bits");
  EXPECT_EQ(deflate_offers("x-foo"), "");
}

TEST(Deflate, CompressedMessagesWithContextTakeover) {
  deflater d;
  message_reader r(sender::server, 1 << 20, true);
  for (int i = 0; i < 3; ++i) {
    const std::string text = "the same words again and again " + std::to_string(i);
    r.feed(compressed_frame(compress(d.z, text)));
    auto e = r.next();
    ASSERT_EQ(e.what, event::kind::message) << e.reason;
    EXPECT_TRUE(e.compressed);
    EXPECT_EQ(e.payload, text);
  }
}

TEST(Deflate, FragmentedCompressedMessage) {
  deflater d;
  const std::string body = compress(d.z, "fragmented and compressed");
  message_reader r(sender::server, 1024, true);
  std::string bytes = compressed_frame(body.substr(0, 5), false);
  bytes.push_back(static_cast<char>(0x80));  // continuation, RSV1 clear (RFC 7692 6.1)
  bytes.push_back(static_cast<char>(body.size() - 5));
  bytes += body.substr(5);
  r.feed(bytes);
  auto e = r.next();
  ASSERT_EQ(e.what, event::kind::message) << e.reason;
  EXPECT_EQ(e.payload, "fragmented and compressed");
}

TEST(Deflate, BombStopsAtTheLimit) {
  deflater d;
  const std::string zeros(8 << 20, '\0');  // 8 MiB of zeros: about 8 KiB compressed
  const std::string body = compress(d.z, zeros);
  ASSERT_LT(body.size(), 16u * 1024);
  inflater inf;
  std::string out;
  EXPECT_EQ(inf.inflate(body, 64 * 1024, out), inflater::result::too_big);
  EXPECT_LE(out.size(), 64u * 1024);
}

TEST(Deflate, GarbageIsInvalidData) {
  message_reader r(sender::server, 1024, true);
  r.feed(compressed_frame("\xff\xff\xff\xff garbage"));
  auto e = r.next();
  EXPECT_EQ(e.what, event::kind::error);
  EXPECT_EQ(e.code, close_code::invalid_data);
}

TEST(Deflate, CompressedControlFrameIs1002) {
  message_reader r(sender::server, 1024, true);
  r.feed(std::string("\xc9\x00", 2));  // ping with RSV1
  EXPECT_EQ(r.next().code, close_code::protocol_error);
}

}  // namespace
}  // namespace airlock::websocket
