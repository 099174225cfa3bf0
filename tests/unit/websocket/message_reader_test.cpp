#include "websocket/message_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace airlock::websocket {
namespace {

// A frame with every bit under the test's control.
std::string frame(std::uint8_t first, std::string_view payload, bool masked,
                  std::uint64_t declared = UINT64_MAX) {
  std::string out;
  out.push_back(static_cast<char>(first));
  const std::uint64_t n = declared == UINT64_MAX ? payload.size() : declared;
  const std::uint8_t m = masked ? 0x80 : 0;
  if (n < 126) {
    out.push_back(static_cast<char>(m | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(m | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n));
  } else {
    out.push_back(static_cast<char>(m | 127));
    for (int s = 56; s >= 0; s -= 8)
      out.push_back(static_cast<char>(n >> s));
  }
  std::uint8_t key[4] = {1, 2, 3, 4};
  if (masked) out.append(reinterpret_cast<char*>(key), 4);
  std::string p(payload);
  if (masked) apply_mask(p.data(), p.size(), key);
  return out + p;
}

event read_one(message_reader& r, std::string_view bytes) {
  r.feed(bytes);
  return r.next();
}

TEST(MessageReader, ReadsMaskedClientTextAndUnmaskedServerBinary) {
  message_reader client(sender::client, 1024, false);
  auto e = read_one(client, frame(0x81, "hello", true));
  ASSERT_EQ(e.what, event::kind::message);
  EXPECT_EQ(e.op, opcode::text);
  EXPECT_EQ(e.payload, "hello");
  message_reader server(sender::server, 1024, false);
  e = read_one(server, frame(0x82, std::string("\0\1\2", 3), false));
  ASSERT_EQ(e.what, event::kind::message);
  EXPECT_EQ(e.op, opcode::binary);
  EXPECT_EQ(e.payload.size(), 3u);
}

TEST(MessageReader, MaskingWrongForTheSenderIs1002) {
  message_reader client(sender::client, 1024, false);
  auto e = read_one(client, frame(0x81, "x", false));
  EXPECT_EQ(e.what, event::kind::error);
  EXPECT_EQ(e.code, close_code::protocol_error);
  EXPECT_EQ(client.next().what, event::kind::error);  // sticks
  message_reader server(sender::server, 1024, false);
  EXPECT_EQ(read_one(server, frame(0x81, "x", true)).code, close_code::protocol_error);
}

TEST(MessageReader, ByteByByteWithLongLengths) {
  for (std::size_t size : {125u, 126u, 65535u, 65536u}) {
    message_reader r(sender::client, 1 << 20, false);
    const std::string payload(size, 'a');
    const auto bytes = frame(0x82, payload, true);
    event e;
    for (char c : bytes) {
      r.feed(std::string_view(&c, 1));
      e = r.next();
      if (e.what != event::kind::need_more) break;
    }
    ASSERT_EQ(e.what, event::kind::message) << size;
    EXPECT_EQ(e.payload, payload);
  }
}

TEST(MessageReader, FragmentsWithAPingBetween) {
  message_reader r(sender::client, 1024, false);
  r.feed(frame(0x01, "hel", true) + frame(0x89, "p", true) + frame(0x00, "lo ", true) +
         frame(0x80, "world", true));
  auto ping = r.next();
  ASSERT_EQ(ping.what, event::kind::control);
  EXPECT_EQ(ping.op, opcode::ping);
  EXPECT_EQ(ping.payload, "p");
  auto msg = r.next();
  ASSERT_EQ(msg.what, event::kind::message);
  EXPECT_EQ(msg.op, opcode::text);
  EXPECT_EQ(msg.payload, "hello world");
  EXPECT_EQ(r.next().what, event::kind::need_more);
}

TEST(MessageReader, ManyEmptyFragmentsDoNotRecurse) {
  message_reader r(sender::server, 1024, false);
  std::string bytes = frame(0x02, "", false);
  for (int i = 0; i < 100000; ++i)
    bytes += frame(0x00, "", false);
  bytes += frame(0x80, "z", false);
  auto e = read_one(r, bytes);
  ASSERT_EQ(e.what, event::kind::message);
  EXPECT_EQ(e.payload, "z");
}

TEST(MessageReader, ProtocolErrors) {
  struct bad {
    std::string bytes;
    std::uint16_t code;
  };
  const std::string big_ping(126, 'p');
  const bad cases[] = {
      {frame(0x83, "x", true), close_code::protocol_error},       // reserved opcode 3
      {frame(0x8B, "x", true), close_code::protocol_error},       // reserved control 0xB
      {frame(0xC1, "x", true), close_code::protocol_error},       // RSV1 without deflate
      {frame(0xA1, "x", true), close_code::protocol_error},       // RSV2
      {frame(0x09, "x", true), close_code::protocol_error},       // fragmented ping
      {frame(0x89, big_ping, true), close_code::protocol_error},  // ping over 125
      {frame(0x80, "x", true), close_code::protocol_error},       // continuation alone
      {frame(0x01, "a", true) + frame(0x81, "b", true), close_code::protocol_error},
      {frame(0x88, "x", true), close_code::protocol_error},           // close of one byte
      {frame(0x88, "\x03\xed", true), close_code::protocol_error},    // close code 1005
      {frame(0x81, "\xc3\x28", true), close_code::invalid_data},      // not UTF-8
      {frame(0x88, "\x03\xe8\xff", true), close_code::invalid_data},  // reason not UTF-8
      {frame(0x82, "", true, 2000), close_code::too_big},             // declared too big
      {frame(0x82, "", true, UINT64_MAX - 1), close_code::too_big},   // 64-bit top bit
      {frame(0x02, std::string(600, 'a'), true) + frame(0x80, std::string(600, 'a'), true),
       close_code::too_big},  // fragments together too big
  };
  int i = 0;
  for (const auto& c : cases) {
    message_reader r(sender::client, 1024, false);
    r.feed(c.bytes);
    event e = r.next();
    while (e.what == event::kind::message || e.what == event::kind::control)
      e = r.next();
    EXPECT_EQ(e.what, event::kind::error) << i;
    EXPECT_EQ(e.code, c.code) << i << " " << e.reason;
    ++i;
  }
}

TEST(MessageReader, TextSplitInsideACharacterIsValidOnceWhole) {
  message_reader r(sender::client, 1024, false);
  r.feed(frame(0x01, "\xe2\x82", true) + frame(0x80, "\xac", true));  // U+20AC in two frames
  auto e = r.next();
  ASSERT_EQ(e.what, event::kind::message);
  EXPECT_EQ(e.payload, "\xe2\x82\xac");
}

TEST(MessageReader, CloseCarriesCodeAndReason) {
  message_reader r(sender::server, 1024, false);
  auto e = read_one(r, frame(0x88, close_payload(1008, "no"), false));
  ASSERT_EQ(e.what, event::kind::control);
  EXPECT_EQ(e.code, 1008);
  EXPECT_EQ(e.reason, "no");
  message_reader empty(sender::server, 1024, false);
  EXPECT_EQ(read_one(empty, frame(0x88, "", false)).code, close_code::no_status);
}

TEST(Frame, EncodeRoundTripsThroughTheReader) {
  for (bool masked : {false, true}) {
    for (std::size_t size : {0u, 5u, 200u, 70000u}) {
      const std::string payload(size, 'q');
      message_reader r(masked ? sender::client : sender::server, 1 << 20, false);
      auto e = read_one(r, encode_frame(opcode::binary, payload, masked));
      ASSERT_EQ(e.what, event::kind::message);
      EXPECT_EQ(e.payload, payload);
    }
  }
}

TEST(Frame, ClosePayloadFitsAControlFrameAtACharacterBoundary) {
  std::string reason;
  for (int i = 0; i < 100; ++i)
    reason += "\xc3\xa9";  // 200 bytes of two-byte characters
  const auto p = close_payload(1008, reason);
  EXPECT_LE(p.size(), 125u);
  EXPECT_EQ(p.size() % 2, 0u);
  EXPECT_TRUE(valid_close_code(1000));
  EXPECT_FALSE(valid_close_code(1005));
  EXPECT_FALSE(valid_close_code(1015));
  EXPECT_TRUE(valid_close_code(4000));
}

}  // namespace
}  // namespace airlock::websocket
