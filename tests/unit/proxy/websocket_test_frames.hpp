#pragma once
// Frames for the WebSocket tests that no encoder of the proxy's makes: a client's compressed
// message (the proxy never compresses what it forwards).

#include "websocket/frame.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>

namespace airlock::proxy::test {

// A client's compressed message (RFC 7692 section 7.2.1: raw deflate, sync-flushed, the
// 0x00 0x00 0xff 0xff tail left off) in one masked frame with RSV1 set. `z` (a raw deflate
// stream, deflateInit2 with -15 window bits) keeps its context between messages.
inline std::string compressed_client_frame(z_stream& z, std::string_view body) {
  std::string deflated(body.size() + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(deflated.data());
  z.avail_out = static_cast<uInt>(deflated.size());
  EXPECT_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
  deflated.resize(deflated.size() - z.avail_out - 4);
  auto frame = websocket::encode_frame(websocket::opcode::binary, deflated, true);
  frame[0] = static_cast<char>(frame[0] | 0x40);  // RSV1: compressed
  return frame;
}

// A raw deflate stream for compressed_client_frame, ended with the test.
struct deflater {
  deflater() { EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK); }
  ~deflater() { deflateEnd(&z); }
  deflater(const deflater&) = delete;
  deflater& operator=(const deflater&) = delete;
  z_stream z{};
};

}  // namespace airlock::proxy::test
