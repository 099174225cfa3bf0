#pragma once
// Protocol Buffers and gRPC request bodies as DLP reads them. In the wire format
// (https://protobuf.dev/programming-guides/encoding/) a string field is a tag byte, its length
// as a varint, then its bytes: a length of 48-57, 65-90 or 97-122 is a digit or a letter, glued
// to the string's first byte, and the next field's tag (field 6 length-delimited is '2') to its
// last. Read as bytes, a key that fills a field has a letter on both sides, so a pattern that
// wants a key to stand alone (an AWS key id, a GitHub token) does not see it (red team 21). Here
// every length-delimited field's bytes are laid out on a line of their own, at every depth where
// they parse as a message themselves, for the scanner to read besides the bytes as sent.
//
// gRPC (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md) frames each message as
// a compressed flag, a 4-byte big-endian length, then the message; grpc_messages cuts a body
// into them however it arrives in pieces, holding one message at a time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::dlp {

// How deep nested messages are read: deeper payloads are still laid out, not parsed further.
inline constexpr int kProtobufDepth = 8;

// Appends to `out` the bytes of every length-delimited field of `message`, each between
// newlines, and those of the fields of each one that parses as a message (to kProtobufDepth).
// With `joined`, the bytes of its own length-delimited fields are also appended there, one after
// the other (a client that joins a stream's chunks of text, message after message). False (and
// both as they were) when `message` is not a well-formed message: then it is one string to its
// parent.
bool protobuf_strings(std::string_view message, std::string& out, int depth = 0,
                      std::string* joined = nullptr);

// One string of a message as a client that knows the schema reads it: the field path (field
// numbers from the top, "1.2.1") and the bytes. Every length-delimited field that reads as text
// (no control byte but tab, CR and LF) or does not parse as a message is one, and every one that
// parses as a message is read into (to kProtobufDepth): text that happens to parse as a
// message is read both ways, a message whose bytes are all printable too.
struct protobuf_text {
  std::string path;
  std::string_view text;
};
// Appends the strings of `message` to `out`; false (and `out` as it was) when it is not a
// well-formed message. The views point into `message`.
bool protobuf_texts(std::string_view message, std::vector<protobuf_text>& out);

// The media types whose bodies are protobuf messages: gRPC's (framed) and protobuf's own.
enum class protobuf_body { none, grpc, message };
protobuf_body protobuf_body_of(std::string_view content_type);

// gRPC messages of a request body that arrives in pieces. Holds the message being received
// (at most `max_message` bytes) and hands each whole one over.
class grpc_messages {
 public:
  explicit grpc_messages(std::uint64_t max_message) : max_(max_message) {}

  // Adds `piece`; `whole` gets each message it completes (in order). An error, and nothing
  // more read, for a message over the bound or one with the compressed flag (its bytes cannot
  // be read here: grpc-encoding is refused at the head, this is a message that says it anyway).
  std::optional<std::string> add(std::string_view piece, std::vector<std::string>& whole);

 private:
  std::uint64_t max_;
  std::string head_;     // the 5-byte prefix being received
  std::string message_;  // the message being received
  std::uint64_t need_ = 0;
  bool in_message_ = false;
  bool failed_ = false;
};

// A protobuf or gRPC request body read as it arrives: add() lays out (protobuf_strings) each
// message a piece completes, after the message's own bytes (so that what gRPC's length prefix
// glues to a message that is not protobuf stands alone too). A protobuf body unframed is one
// message, read at its end. At most `max_message` bytes are held.
class protobuf_reader {
 public:
  protobuf_reader(protobuf_body kind, std::uint64_t max_message)
      : kind_(kind), max_(max_message), grpc_(max_message) {}

  // Appends the layout of what `piece` completes to `view`, and the top-level fields of each
  // message to `joined` (protobuf_strings); an error when a message cannot be read (over the
  // bound, compressed).
  std::optional<std::string> add(std::string_view piece, bool last, std::string& view,
                                 std::string& joined);

 private:
  protobuf_body kind_;
  std::uint64_t max_;
  grpc_messages grpc_;
  std::string body_;  // protobuf_body::message: the body so far
  std::vector<std::string> whole_;
};

}  // namespace airlock::filters::dlp
