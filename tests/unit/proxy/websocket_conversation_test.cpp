#include "proxy/websocket_conversation.hpp"

#include "websocket/message_reader.hpp"
#include "websocket_test_frames.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

// The relay's decisions without sockets: frames re-framed for the other side, a refused message
// never forwarded (1008 to the sender, 1008 to the other side), protocol errors closed with
// their code, the summary in the record.
namespace airlock::proxy {
namespace {
namespace ws = websocket;
using filters::message_from;

// Refuses any message that contains "forbidden" (from the client), and notes each opcode.
std::vector<std::uint8_t> opcodes_seen;
class word_filter final : public filters::filter {
 public:
  filters::verdict on_message(filters::exchange&, const filters::message& m) override {
    opcodes_seen.push_back(m.opcode);
    if (m.payload.find("forbidden") != std::string_view::npos)
      return filters::verdict::refuse(core::errc::placeholder_refused, "a word not allowed");
    return filters::verdict::next();
  }
};
class word_factory final : public filters::filter_factory {
 public:
  filters::filter* create(const filters::exchange&, std::pmr::memory_resource& a) const override {
    return make<word_filter>(a);
  }
};

struct fixture {
  fixture() {
    factories.push_back(std::make_unique<word_factory>());
    c.emplace(factories, ex);
  }
  std::vector<std::unique_ptr<filters::filter_factory>> factories;
  filters::exchange ex;
  std::optional<filters::chain> c;
};

// The frames in `bytes` as a reader on the receiving side sees them.
std::vector<ws::event> frames(std::string_view bytes, ws::sender from) {
  ws::message_reader r(from, 1 << 20, false);
  r.feed(bytes);
  std::vector<ws::event> out;
  for (auto e = r.next(); e.what != ws::event::kind::need_more; e = r.next()) {
    out.push_back(e);
    if (e.what == ws::event::kind::error) break;
  }
  return out;
}

TEST(WebsocketConversation, MessagesAreReframedForTheOtherSide) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  // A fragmented client message with a ping between its frames.
  const auto first = ws::encode_frame(ws::opcode::text, "hel", true);
  std::string bytes = first;
  bytes[0] = static_cast<char>(0x01);  // FIN clear
  auto last = ws::encode_frame(ws::opcode::continuation, "lo", true);
  bytes += ws::encode_frame(ws::opcode::ping, "p", true) + last;
  conv.on_bytes(message_from::client, bytes, out);
  EXPECT_TRUE(out.to_sender.empty());
  const auto up = frames(out.to_other, ws::sender::client);  // masked towards the origin
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(up[0].op, ws::opcode::ping);
  EXPECT_EQ(up[1].payload, "hello");
  out = {};
  conv.on_bytes(message_from::origin, ws::encode_frame(ws::opcode::text, "echo", false), out);
  const auto down = frames(out.to_other, ws::sender::server);  // unmasked towards the client
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].payload, "echo");
  ASSERT_TRUE(f.ex.record.websocket);
  EXPECT_EQ(f.ex.record.websocket->client_messages, 1u);
  EXPECT_EQ(f.ex.record.websocket->origin_messages, 1u);
  EXPECT_EQ(f.ex.record.protocol, "websocket");
}

TEST(WebsocketConversation, ARefusedMessageIsNeverForwarded) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::text, "a forbidden thing", true) +
                    ws::encode_frame(ws::opcode::text, "after", true),
                out);
  EXPECT_TRUE(conv.ended());
  const auto back = frames(out.to_sender, ws::sender::server);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].op, ws::opcode::close);
  EXPECT_EQ(back[0].code, 1008);
  EXPECT_NE(back[0].reason.find("placeholder_refused"), std::string::npos);
  const auto up = frames(out.to_other, ws::sender::client);
  ASSERT_EQ(up.size(), 1u);  // only the close: neither the message nor the one after it
  EXPECT_EQ(up[0].op, ws::opcode::close);
  EXPECT_EQ(up[0].code, 1008);
  EXPECT_EQ(f.ex.record.reason, core::errc::placeholder_refused);
  EXPECT_EQ(f.ex.record.websocket->refused_from, "client");
  EXPECT_EQ(f.ex.record.websocket->closed_by, "proxy");
  out = {};
  conv.on_bytes(message_from::origin, ws::encode_frame(ws::opcode::text, "late", false), out);
  EXPECT_TRUE(out.to_other.empty());
}

TEST(WebsocketConversation, AProtocolErrorClosesWithItsCode) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  // A client frame without a mask.
  conv.on_bytes(message_from::client, ws::encode_frame(ws::opcode::text, "x", false), out);
  EXPECT_TRUE(conv.ended());
  EXPECT_EQ(frames(out.to_sender, ws::sender::server).at(0).code, 1002);
  EXPECT_EQ(frames(out.to_other, ws::sender::client).at(0).code, 1001);
  EXPECT_EQ(f.ex.record.reason, core::errc::bad_request);
}

TEST(WebsocketConversation, CloseFramesPassAndAreSummarised) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  opcodes_seen.clear();
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true), out);
  // The reason reaches the chain as what it is, a close (not a text message a filter would
  // join to the data messages).
  EXPECT_EQ(opcodes_seen, std::vector<std::uint8_t>{8});
  EXPECT_FALSE(conv.ended());
  const auto up = frames(out.to_other, ws::sender::client);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].code, 1000);
  EXPECT_EQ(f.ex.record.websocket->close_code, 1000);
  EXPECT_EQ(f.ex.record.websocket->closed_by, "client");
}

// RFC 6455 section 5.5.1: no data after a Close. The agent closes, the origin answers with its
// Close and a text frame in the same read: the text never reaches the agent, and the record
// names the agent, who closed first, with the origin's reply beside it.
TEST(WebsocketConversation, FramesAfterTheOriginsCloseAreDiscarded) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true), out);
  out = {};
  conv.on_bytes(message_from::origin,
                ws::encode_frame(ws::opcode::close, ws::close_payload(4000, "origin"), false) +
                    ws::encode_frame(ws::opcode::text, "after close", false),
                out);
  const auto down = frames(out.to_other, ws::sender::server);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].op, ws::opcode::close);
  EXPECT_EQ(down[0].code, 4000);
  EXPECT_TRUE(out.to_sender.empty());
  EXPECT_TRUE(conv.ended());  // both Closes have passed
  out = {};
  conv.on_bytes(message_from::origin, ws::encode_frame(ws::opcode::text, "later", false), out);
  EXPECT_TRUE(out.to_other.empty());
  const auto& w = *f.ex.record.websocket;
  EXPECT_EQ(w.origin_messages, 0u);
  EXPECT_EQ(w.closed_by, "client");
  EXPECT_EQ(w.close_code, 1000);
  EXPECT_EQ(w.close_reply_code, 4000);
}

// The same for the agent: what it sends after its Close (a message, a ping, a second Close)
// never reaches the origin, and is not even read (garbage there is no protocol error).
TEST(WebsocketConversation, FramesAfterTheAgentsCloseAreDiscarded) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true) +
                    ws::encode_frame(ws::opcode::text, "after close", true) +
                    ws::encode_frame(ws::opcode::ping, "p", true),
                out);
  const auto up = frames(out.to_other, ws::sender::client);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].code, 1000);
  out = {};
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::close, ws::close_payload(3001, "again"), true) +
                    ws::encode_frame(ws::opcode::text, "unmasked", false),
                out);
  EXPECT_TRUE(out.to_other.empty());
  EXPECT_TRUE(out.to_sender.empty());
  EXPECT_FALSE(conv.ended());
  // The origin may still finish what it was sending before it answers (RFC 6455 5.5.1).
  conv.on_bytes(message_from::origin, ws::encode_frame(ws::opcode::text, "last", false), out);
  conv.on_bytes(message_from::origin,
                ws::encode_frame(ws::opcode::close, ws::close_payload(1000, ""), false), out);
  const auto down = frames(out.to_other, ws::sender::server);
  ASSERT_EQ(down.size(), 2u);
  EXPECT_EQ(down[0].payload, "last");
  EXPECT_EQ(down[1].code, 1000);
  EXPECT_TRUE(conv.ended());
  const auto& w = *f.ex.record.websocket;
  EXPECT_EQ(w.client_messages, 0u);
  EXPECT_EQ(w.origin_messages, 1u);
  EXPECT_EQ(w.closed_by, "client");
  EXPECT_EQ(w.close_code, 1000);
  EXPECT_EQ(w.close_reply_code, 1000);
  EXPECT_EQ(f.ex.record.reason, core::errc::ok);
}

// A refusal while the closing handshake is under way: the side that already got a Close gets
// no second one; the side that closed first gets the proxy's 1008 as its answer.
TEST(WebsocketConversation, ARefusalDuringTheClosingHandshakeAnswersTheFirstClose) {
  fixture f;
  websocket_conversation conv(*f.c, 1024, false);
  websocket_conversation::output out;
  conv.on_bytes(message_from::client,
                ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "bye"), true), out);
  out = {};
  conv.on_bytes(message_from::origin, ws::encode_frame(ws::opcode::text, "forbidden", false), out);
  EXPECT_TRUE(conv.ended());
  EXPECT_TRUE(out.to_sender.empty());  // the origin already has the agent's Close
  const auto down = frames(out.to_other, ws::sender::server);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].code, 1008);
  const auto& w = *f.ex.record.websocket;
  EXPECT_EQ(w.closed_by, "client");
  EXPECT_EQ(w.close_code, 1000);
  EXPECT_EQ(w.close_reply_code, 1008);
  EXPECT_EQ(w.refused_from, "origin");
  EXPECT_EQ(f.ex.record.reason, core::errc::placeholder_refused);
}

TEST(WebsocketConversation, ACloseReasonIsCheckedAsATextMessage) {
  for (const auto from : {message_from::client, message_from::origin}) {
    fixture f;
    websocket_conversation conv(*f.c, 1024, false);
    websocket_conversation::output out;
    const bool client = from == message_from::client;
    conv.on_bytes(
        from,
        ws::encode_frame(ws::opcode::close, ws::close_payload(1000, "a forbidden word"), client),
        out);
    EXPECT_TRUE(conv.ended());
    const auto other = frames(out.to_other, client ? ws::sender::client : ws::sender::server);
    ASSERT_EQ(other.size(), 1u);
    EXPECT_EQ(other[0].code, 1008);
    EXPECT_EQ(other[0].reason.find("forbidden"), std::string::npos);
    // The agent is told why (its own close, or the origin's); the origin never is.
    const auto to_agent = client ? frames(out.to_sender, ws::sender::server).at(0) : other[0];
    EXPECT_NE(to_agent.reason.find("placeholder_refused"), std::string::npos);
    if (client) {
      EXPECT_EQ(other[0].reason, "closed by the proxy");
    }
    EXPECT_EQ(f.ex.record.reason, core::errc::placeholder_refused);
    EXPECT_EQ(f.ex.record.websocket->refused_from, client ? "client" : "origin");
  }
}

// One read of compressed frames can hold dozens of messages that each inflate to the limit
// (here 64 of ~300 bytes, 256 KiB each: 16 MiB from 20 KiB). The conversation answers a round
// at a time: no round holds more than output_bound plus one message, the caller writes it and
// asks for the next with no new bytes, and every message comes through, in order.
TEST(WebsocketConversation, OneReadOfCompressedMessagesIsAnsweredARoundAtATime) {
  fixture f;
  constexpr std::size_t max_message = 256 * 1024;
  constexpr std::size_t count = 64;
  websocket_conversation conv(*f.c, max_message, true);
  test::deflater d;
  std::string read;
  for (std::size_t i = 0; i < count; ++i)
    read += test::compressed_client_frame(
        d.z, std::string(max_message, static_cast<char>('a' + i % 26)));
  ASSERT_LT(read.size(), 64u * 1024);  // one read's worth (websocket_relay.hpp reads 64 KiB)

  // A round: output_bound (64 KiB, as docs/policy.md says) plus one message and its head.
  constexpr std::size_t round_bound = 64 * 1024 + max_message + 14;
  ws::message_reader at_origin(ws::sender::client, max_message, false);
  std::size_t got = 0;
  std::size_t rounds = 0;
  std::string_view bytes = read;
  // Until a round brings nothing; bounded: each round but the last forwards a message or more.
  for (;;) {
    ASSERT_LE(++rounds, count + 1);
    websocket_conversation::output out;
    conv.on_bytes(message_from::client, bytes, out);
    bytes = {};
    ASSERT_LE(out.to_other.size(), round_bound) << "round " << rounds;
    EXPECT_TRUE(out.to_sender.empty());
    if (out.to_other.empty()) break;
    at_origin.feed(out.to_other);
    for (auto e = at_origin.next(); e.what != ws::event::kind::need_more; e = at_origin.next()) {
      ASSERT_EQ(e.what, ws::event::kind::message);
      ASSERT_EQ(e.payload, std::string(max_message, static_cast<char>('a' + got % 26)));
      ++got;
    }
  }
  EXPECT_EQ(got, count);
  EXPECT_EQ(f.ex.record.websocket->client_messages, count);
  EXPECT_FALSE(conv.ended());
}

}  // namespace
}  // namespace airlock::proxy
