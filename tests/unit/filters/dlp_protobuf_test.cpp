#include "filters/dlp/protobuf_view.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

// protobuf_view.hpp: each length-delimited field laid out on its own line, nested messages
// read to their depth; gRPC's framing cut however the body arrives.
namespace airlock::filters::dlp {
namespace {

constexpr std::string_view kKey = "AKIAIOSFODNN7EXAMPLE";

// A length-delimited field: tag (field << 3 | 2), varint length, bytes.
std::string field(unsigned number, std::string_view bytes) {
  std::string out(1, static_cast<char>(number << 3 | 2));
  std::size_t n = bytes.size();
  do {
    const auto b = static_cast<unsigned char>(n & 0x7f);
    n >>= 7;
    out += static_cast<char>(n != 0 ? (b | 0x80) : b);
  } while (n != 0);
  return out + std::string(bytes);
}

std::string grpc_frame(std::string_view message, char flag = 0) {
  std::string out(1, flag);
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((message.size() >> shift) & 0xff);
  return out + std::string(message);
}

TEST(DlpProtobuf, AFieldThatIsTheKeyStandsOnItsOwnLine) {
  // 65 bytes ('A' as the length) then field 6 ('2' as the tag): a letter on each side.
  const std::string key_field = std::string(kKey) + std::string(45, 'x');
  const std::string message = field(1, key_field) + field(6, "tail");
  ASSERT_EQ(message[1], 'A');
  std::string view;
  ASSERT_TRUE(protobuf_strings(message, view));
  EXPECT_NE(view.find("\n" + key_field + "\n"), std::string::npos) << view;
  EXPECT_NE(view.find("\ntail\n"), std::string::npos);
}

TEST(DlpProtobuf, NestedMessagesAreReadToTheirDepth) {
  const std::string inner = field(2, kKey) + field(7, "z");
  const std::string message = field(1, field(3, inner));
  std::string view;
  ASSERT_TRUE(protobuf_strings(message, view));
  EXPECT_NE(view.find(std::string("\n") + std::string(kKey) + "\n"), std::string::npos);
  // Deeper than kProtobufDepth: the payload is still laid out whole, not parsed further.
  std::string deep = field(1, kKey);
  for (int i = 0; i < kProtobufDepth + 4; ++i)
    deep = field(1, deep);
  view.clear();
  ASSERT_TRUE(protobuf_strings(deep, view));
  EXPECT_NE(view.find(kKey), std::string::npos);
}

TEST(DlpProtobuf, WhatIsNotAMessageLeavesNothing) {
  std::string view = "kept";
  for (std::string_view bad : {std::string_view("\x0a\x05"
                                                "ab",
                                                4),                  // runs past the end
                               std::string_view("\x07", 1),          // wire type 7
                               std::string_view("\x00\x01", 2),      // field number 0
                               std::string_view("\x09\x01\x02", 3),  // a short fixed64
                               std::string_view("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                                                11)}) {  // an 11-byte varint
    EXPECT_FALSE(protobuf_strings(bad, view)) << testing::PrintToString(bad);
    EXPECT_EQ(view, "kept");
  }
  // Numbers and the empty message are messages with nothing to lay out.
  EXPECT_TRUE(protobuf_strings(std::string_view("\x08\x96\x01\x15\x01\x02\x03\x04", 8), view));
  EXPECT_TRUE(protobuf_strings("", view));
  EXPECT_EQ(view, "kept");
}

TEST(DlpProtobuf, MediaTypes) {
  EXPECT_EQ(protobuf_body_of("application/grpc"), protobuf_body::grpc);
  EXPECT_EQ(protobuf_body_of("Application/GRPC+proto; charset=x"), protobuf_body::grpc);
  EXPECT_EQ(protobuf_body_of("application/grpc-web+proto"), protobuf_body::grpc);
  EXPECT_EQ(protobuf_body_of("application/x-protobuf"), protobuf_body::message);
  EXPECT_EQ(protobuf_body_of("application/grpcx"), protobuf_body::none);
  EXPECT_EQ(protobuf_body_of("application/json"), protobuf_body::none);
}

TEST(DlpProtobuf, GrpcMessagesCutHoweverTheBodyArrives) {
  const std::string a = field(1, kKey), b = field(2, "second");
  const std::string body = grpc_frame(a) + grpc_frame("") + grpc_frame(b);
  for (std::size_t step : {1u, 3u, 5u, 7u, 1000u}) {
    grpc_messages reader(1024);
    std::vector<std::string> got, whole;
    for (std::size_t at = 0; at < body.size(); at += step) {
      whole.clear();
      ASSERT_FALSE(reader.add(std::string_view(body).substr(at, step), whole));
      got.insert(got.end(), whole.begin(), whole.end());
    }
    EXPECT_EQ(got, (std::vector<std::string>{a, "", b})) << step;
  }
}

TEST(DlpProtobuf, GrpcMessagesOverTheBoundOrCompressedAreErrors) {
  std::vector<std::string> whole;
  grpc_messages small(8);
  auto error = small.add(grpc_frame(std::string(9, 'x')), whole);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("9 bytes"), std::string::npos) << *error;
  EXPECT_TRUE(whole.empty());
  grpc_messages flagged(1024);
  EXPECT_TRUE(flagged.add(grpc_frame("x", 1), whole));
}

TEST(DlpProtobuf, ReaderLaysOutEachMessageAndAnUnframedBodyAtItsEnd) {
  const std::string key_field = std::string(kKey) + std::string(45, 'x');
  protobuf_reader grpc(protobuf_body::grpc, 1024);
  std::string view, joined;
  const std::string body = grpc_frame(field(1, key_field));
  ASSERT_FALSE(grpc.add(std::string_view(body).substr(0, 10), false, view, joined));
  EXPECT_EQ(view, "");  // nothing whole yet
  ASSERT_FALSE(grpc.add(std::string_view(body).substr(10), true, view, joined));
  EXPECT_NE(view.find("\n" + key_field + "\n"), std::string::npos);

  protobuf_reader plain(protobuf_body::message, 1024);
  view.clear();
  const std::string message = field(1, key_field);
  ASSERT_FALSE(plain.add(std::string_view(message).substr(0, 4), false, view, joined));
  EXPECT_EQ(view, "");
  ASSERT_FALSE(plain.add(std::string_view(message).substr(4), true, view, joined));
  EXPECT_NE(view.find("\n" + key_field + "\n"), std::string::npos);
  protobuf_reader bounded(protobuf_body::message, 4);
  EXPECT_TRUE(bounded.add(message, true, view, joined));
}

TEST(DlpProtobuf, TopLevelFieldsAreJoinedMessageAfterMessage) {
  // A stream's chunks of text: the key in two messages, each field holding half.
  protobuf_reader grpc(protobuf_body::grpc, 1024);
  std::string view, joined;
  const std::string body = grpc_frame(field(1, kKey.substr(0, 9)) + std::string("\x08\x01")) +
                           grpc_frame(field(1, kKey.substr(9)));
  ASSERT_FALSE(grpc.add(body, true, view, joined));
  EXPECT_EQ(joined, kKey);
  // Nested fields are laid out, not joined; what fails to parse adds nothing.
  std::string nested_joined;
  view.clear();
  ASSERT_TRUE(protobuf_strings(field(1, field(2, "in")), view, 0, &nested_joined));
  EXPECT_EQ(nested_joined, field(2, "in"));
  std::string kept = "kept";
  EXPECT_FALSE(protobuf_strings(std::string_view("\x0a\x01", 2), view, 0, &kept));
  EXPECT_EQ(kept, "kept");
}

}  // namespace
}  // namespace airlock::filters::dlp
