#pragma once
// A gRPC body as its client reads it: the payloads of its length-prefixed messages, one after
// another. Each message is "Compressed-Flag (1 byte) Message-Length (4 bytes, big-endian)
// Message" (gRPC over HTTP/2, PROTOCOL-HTTP2.md "Length-Prefixed-Message"; gRPC-Web frames the
// same way). A client that gets a value in two messages can join it, so the binary guard reads
// the payloads joined (grpc_reading), where the five bytes between them would keep it apart,
// as well as the body as it came (a reader that is no gRPC client: curl); the bytes the client
// gets are the body as it came, prefixes included.
//
// @par Thread Safety
// One instance per response body; not shared.

#include "filters/redaction/stream.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

// The five bytes of a message's prefix: the message length it gives (bytes 1 to 4, big-endian).
inline constexpr std::size_t kGrpcPrefixBytes = 5;
inline std::uint64_t grpc_message_length(std::string_view prefix) noexcept {
  std::uint64_t n = 0;
  for (std::size_t i = 1; i < kGrpcPrefixBytes; ++i)
    n = n << 8 | static_cast<unsigned char>(prefix[i]);
  return n;
}

class grpc_payloads {
 public:
  // Appends the message payload bytes of `piece` (the body as it came, in order) to `payload`
  // and keeps its prefix bytes aside, each at the payload offset it stands before.
  void split(std::string_view piece, std::string& payload);
  // `released`: the next payload bytes the guard let go, in order. Appends them to `out` with
  // the prefixes that stand before or among them, and those that stand right after them.
  void rejoin(std::string_view released, std::string& out);
  // The body ended: appends whatever prefix bytes are left (a message cut short).
  void finish(std::string& out);

 private:
  struct prefix {
    std::uint64_t at;  // the payload offset it stands before
    std::string bytes;
  };
  void emit_prefixes_at(std::uint64_t offset, std::string& out);

  std::deque<prefix> prefixes_;
  std::string head_;               // the current prefix's bytes so far (under 5)
  std::uint64_t left_ = 0;         // payload bytes of the current message still to come
  std::uint64_t payload_in_ = 0;   // payload bytes split so far
  std::uint64_t payload_out_ = 0;  // payload bytes rejoined so far
};

// The guard's reading of a gRPC body's payloads joined, beside the reading of its bytes as they
// came (response_body's own stream): a byte goes on once both have let it go, so neither reading
// releases the start of a value the other is still holding back.
class grpc_reading {
 public:
  explicit grpc_reading(std::shared_ptr<const engine> e) : stream_(std::move(e)) {}

  // `piece`: the body's next bytes; `raw_released`: how many bytes the reading of the bytes as
  // they came has released so far. Appends what may go on to `out`.
  void write(std::string_view piece, std::uint64_t raw_released, std::string& out);
  // The body ended, and the other reading released all of it: appends the rest.
  void finish(std::string& out);
  // A secret was found in the payloads joined.
  bool found() const noexcept { return stream_.redactions() > 0; }

 private:
  void release(std::uint64_t up_to, std::string& out);

  grpc_payloads payloads_;
  stream stream_;
  std::string payload_;   // (scratch for each write)
  std::string released_;  // (scratch)
  std::string held_;      // the body rejoined, past what the other reading released
  std::uint64_t sent_ = 0;
};

}  // namespace airlock::filters::redaction
