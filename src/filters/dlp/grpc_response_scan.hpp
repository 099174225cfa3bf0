#pragma once
// The response side of DLP for gRPC and protobuf answers: their messages read for prompt
// injection (injection.hpp) as a client reads them, before they go on.
//
// A gRPC answer (application/grpc, grpc+CODEC, gRPC-Web and Connect's streams) is a series of
// length-prefixed messages (PROTOCOL-HTTP2.md "Length-Prefixed-Message"; Connect's "enveloped
// messages"); a protobuf answer (application/x-protobuf, Connect's unary application/proto) is
// one message. Each message is held until it is whole and read, then passes byte for byte: no
// message is rewritten, so a finding cannot be answered by a marker as a text body's is. The
// filter refuses the answer under `block` (the stream ends, and an answer not begun becomes
// the proxy's gRPC status) and records the finding otherwise.
//
// What is read: the message's bytes as they are, and its strings joined across the messages of
// the answer per field path (protobuf_texts; for the JSON codecs, the JSON's own paths,
// event_text.hpp), as a client that prints a streamed answer's text field joins its pieces: a
// phrase streamed a word per message is whole only there. Each path keeps the last kCarry
// bytes of its text (carry.hpp); at most kMaxPaths paths (the rest share the last).
//
// A message over `max_message` bytes (an unframed body likewise) is held to that bound only:
// its first bytes are read as they are and the rest passes unread, as a text body past
// max_body_bytes does; the messages after it are read again.
//
// A message with the compressed flag is inflated for reading (grpc-encoding gzip or deflate;
// a gRPC server may compress whatever the client's grpc-accept-encoding said, as grpcio's
// does; one that inflates past the bound is read to it) and passes as it came. Not readable,
// and so a finding of kUnreadableCoding: a compressed message in a coding the proxy cannot
// read, that does not inflate whole, or whose compressed bytes are over `max_message`. After
// it nothing more is read: under `block` the answer is refused, otherwise the rest passes as
// it comes.
//
// @par Thread Safety
// One per response body, one thread.

#include "filters/dlp/carry.hpp"
#include "filters/redaction/content_coding.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

class grpc_response_scan {
 public:
  enum class framing { grpc, unframed };
  enum class codec { protobuf, json };
  static constexpr std::size_t kMaxPaths = 64;

  // `compressed`: how a message with the compressed flag is coded (grpc_message_coding).
  grpc_response_scan(framing f, codec c, std::uint64_t max_message,
                     redaction::content_coding compressed = redaction::content_coding::identity)
      : framing_(f), codec_(c), max_(max_message), compressed_(compressed) {}

  // The scan for an answer with this Content-Type (gRPC's types, protobuf's: protobuf_view.hpp;
  // a "+json" codec reads JSON), or nullopt for any other.
  static std::optional<grpc_response_scan> for_type(
      std::string_view content_type, std::uint64_t max_message,
      redaction::content_coding compressed = redaction::content_coding::identity);

  // Takes the next piece of the answer (`last` at its end) and appends to `out` the bytes of
  // every message it completes, once read; at the end, what was left of a message cut short
  // (read as it is). Returns what was found in them: an injection class, or kUnreadableCoding
  // (after which every byte passes unread).
  std::optional<std::string_view> write(std::string_view piece, bool last, std::string& out);

 private:
  std::optional<std::string_view> take(std::string_view& piece, std::string& out);
  std::optional<std::string_view> read(std::string_view message, unsigned char flags);
  bool inflatable() const noexcept;
  std::optional<std::string_view> read_compressed(std::string_view message, unsigned char flags);
  std::optional<std::string_view> read_joined(std::string_view path, std::string_view text);

  framing framing_;
  codec codec_;
  std::uint64_t max_;
  redaction::content_coding compressed_;
  bool unread_ = false;  // what comes passes unread
  std::string frame_;    // the message being received, its 5-byte prefix first (gRPC)
  std::uint64_t need_ = 0;
  std::uint64_t skip_ = 0;  // bytes of a message over the bound that pass unread
  std::map<std::string, scan_window, std::less<>> joined_;  // per field path
  std::map<std::string, std::string, std::less<>> texts_;   // (one message's, scratch)
};

}  // namespace airlock::filters::dlp
