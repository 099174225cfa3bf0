// The WebSocket message reader (src/websocket/message_reader.*) on any bytes, from a client
// (masked) or a server (unmasked), with or without permessage-deflate, fed in pieces cut by a
// plan drawn from the input. Nothing may crash or read out of bounds; a message may never
// exceed the limit (inflated included: the decompression-bomb bound); text messages must be
// UTF-8; after an error, the reader must keep answering that error.

#include "core/utf8.hpp"
#include "fuzz_input.hpp"
#include "websocket/message_reader.hpp"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  using websocket::event;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::uint8_t config = fuzz::take_byte(in);
  const auto from = (config & 1) ? websocket::sender::client : websocket::sender::server;
  const bool deflate = (config & 2) != 0;
  const std::uint64_t limit = (config & 4) ? 64 : 64 * 1024;
  websocket::message_reader reader(from, limit, deflate);
  std::size_t at = 0;
  bool failed = false;
  std::uint16_t code = 0;
  for (std::size_t cut : fuzz::split_points(in.size(), config)) {
    reader.feed(in.substr(at, cut - at));
    at = cut;
    for (int round = 0; round < 1'000'000; ++round) {
      const event e = reader.next();
      if (e.what == event::kind::need_more) break;
      if (e.what == event::kind::error) {
        if (failed && e.code != code) fuzz::fail("the error changed");
        failed = true;
        code = e.code;
        break;
      }
      if (failed) fuzz::fail("an event after an error");
      if (e.what == event::kind::message) {
        if (e.payload.size() > limit) fuzz::fail("message over the limit");
        if (e.op == websocket::opcode::text && !core::valid_utf8(e.payload))
          fuzz::fail("text message not UTF-8");
      } else if (e.payload.size() > 125) {
        fuzz::fail("control frame over 125 bytes");
      }
    }
  }
  return 0;
}
