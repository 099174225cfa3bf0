#pragma once
// A gRPC body as its client reads it: the payloads of its length-prefixed messages, one after
// another. Each message is "Compressed-Flag (1 byte) Message-Length (4 bytes, big-endian)
// Message" (gRPC over HTTP/2, PROTOCOL-HTTP2.md "Length-Prefixed-Message"; gRPC-Web frames the
// same way). A client that gets a value in two messages can join it, so the binary guard must
// read the payloads joined, where the five bytes between them would keep it apart; the bytes
// the client gets are still the body as it came, prefixes included.
//
// @par Thread Safety
// One instance per response body; not shared.

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

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

}  // namespace airlock::filters::redaction
