#pragma once
// One response body through redaction, as it streams: decode (gzip/deflate), redact (stream),
// encode again in the upstream's coding, with a cap on the decoded size past which the body is
// cut off and a marker line says so (text) or fails (binary), and a cap on what is sent.
//
//   auto plan = plan_response(response_head);
//   if (plan.treatment == body_treatment::refuse) -> 502, nothing sent
//   if (plan.treatment == body_treatment::redact) {
//     response_body body(engine, plan, max_bytes, marker, response_bytes);
//     for each piece: if (!body.write(piece, out)) fail; send(out); out.clear();
//                     if (body.read_enough()) break;
//     if (!body.finish(out)) fail; send(out);
//   }
//
// @par Thread Safety
// One per response, one thread at a time; the engine is shared.

#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/content_type.hpp"
#include "filters/redaction/decoder.hpp"
#include "filters/redaction/encoder.hpp"
#include "filters/redaction/escape_guard.hpp"
#include "filters/redaction/event_guard.hpp"
#include "filters/redaction/grpc_payloads.hpp"
#include "filters/redaction/stream.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

enum class body_treatment {
  pass,    // binary: byte for byte
  redact,  // text-like, in a coding the proxy decodes
  refuse,  // text in a charset or a coding the proxy cannot see into: fail closed
};

struct response_plan {
  body_treatment treatment = body_treatment::redact;
  body_class media;
  content_coding coding = content_coding::identity;
  std::string why;  // for refuse: what could not be read ("Content-Encoding br")
};

// From the response's Content-Type (a singleton: several lines are refused) and its
// Content-Encoding lines, joined. A binary body in gzip or deflate is guarded decoded (and
// encoded again); one in a coding the proxy cannot decode is refused like text.
response_plan plan_response(const boost::beast::http::fields& head);

class response_body {
 public:
  // For a plan to redact: `e` is the rule's engine. For a plan to pass (binary), the body is
  // guarded instead: `e` holds literal secrets only (rule_engines::for_binary), the bytes pass
  // unchanged (decoded for the look and encoded again when it came in gzip or deflate; a gRPC
  // body's message payloads are read joined, as its client may join them), and a
  // body that carries a secret fails (write() or finish() returns false before any byte of the
  // secret is released), since a secret never goes back to the agent.
  //
  // `response_bytes` (limits.response_bytes) bounds what a small coded body may become: a
  // guarded body that decodes to more fails (a decompression bomb is inflated no further than
  // the policy lets a response be), and so does any body whose output, encoded again, would
  // pass it (too_large()). Text is cut at `max_bytes` or `response_bytes`, the lesser, reading
  // at most the stream's hold-back past the cut.
  response_body(std::shared_ptr<const engine> e, const response_plan& plan, std::uint64_t max_bytes,
                std::string marker, std::uint64_t response_bytes);
  ~response_body();
  response_body(const response_body&) = delete;
  response_body& operator=(const response_body&) = delete;

  // A piece of the body as it came from upstream (still encoded). Appends what may go to the
  // client now. False when the body cannot be decoded (error() says why): the client must not
  // get a whole-looking response then.
  bool write(std::string_view piece, std::string& out);
  // The upstream body ended (or enough was read): appends the rest, the marker when cut off,
  // and the coding's trailer. False when the encoded body was truncated or corrupt.
  bool finish(std::string& out);

  // Enough text was read (max_bytes and the stream's hold-back after it): stop reading, then
  // finish().
  bool read_enough() const noexcept { return read_enough_; }
  // More than max_bytes of decoded text arrived: the output stops at max_bytes, with the
  // marker. Past the cut, as much as the stream holds back is read first, so that a value the
  // cut falls into is redacted whole rather than sent in part.
  bool cut_off() const noexcept { return !guard_ && decoded_ > max_bytes_; }
  std::uint64_t decoded_bytes() const noexcept { return decoded_; }
  const stream& redaction() const noexcept { return stream_; }
  const char* error() const noexcept { return error_; }
  // Guarding a binary body (pass) rather than redacting a text one.
  bool guarding() const noexcept { return guard_; }
  // The error is the content's, not the transfer's: a secret in a guarded body, or text the
  // redactors cannot read (else the coded bytes were corrupt or cut short).
  bool unredactable() const noexcept { return unredactable_; }
  // The error is the size's: decoded or sent past response_bytes.
  bool too_large() const noexcept { return too_large_; }

 private:
  bool take(std::string_view bytes, std::string& out);
  bool guard_decoded(std::string_view bytes, std::string& out);
  // Counts what write() or finish() appended to `out` after `before` bytes: false (and none of
  // it) when the output passes response_bytes.
  bool count_sent(std::string& out, std::size_t before);
  bool fail_too_large(const char* why);
  bool looks_like_ascii_text(std::string_view bytes);
  bool take_text(std::string_view text, std::string& out);
  // Redacted text through the guards (in place: the event guard for an event stream, the
  // escape guard for all text; with `end`, what they hold after it): false when one cut the
  // body (error_ says why).
  bool through_guards(std::string& text, bool end);
  // The text held while the framing was undecided, put before redacted_.
  void release_undecided();
  bool refuse_text(const char* why, std::string& text);
  // A text body not labelled as an event stream: whether its first bytes are one.
  void decide_framing();
  static constexpr std::size_t kSniffEvents = 16;
  void clamp(std::string& text);
  void emit(std::string& text, std::string& out, bool flush);
  bool guarded(std::string& out);

  stream stream_;
  std::optional<event_guard> events_;     // event streams, NDJSON: a secret split across them
  std::optional<escape_guard> escapes_;   // text: a secret behind JSON or HTML escapes
  bool sniffing_ = false;                 // untyped-as-events text: its framing undecided
  std::string sniff_;                     // its first kSniffEvents bytes
  std::string undecided_;                 // redacted text held while undecided
  std::shared_ptr<const engine> engine_;  // for the event guard, until decided
  std::optional<grpc_reading> grpc_;      // binary gRPC: also read with its messages joined
  std::string raw_scratch_;               // (what stream_ releases of a gRPC body: counted)
  std::uint64_t raw_released_ = 0;
  std::optional<decoder> decoder_;
  std::optional<encoder> encoder_;
  bool flush_each_ = false;  // event streams: every write's output decodes on its own
  bool guard_ = false;       // binary: pass unchanged, fail on a secret
  std::uint64_t max_bytes_;
  std::string marker_;
  std::uint64_t response_bytes_;
  std::uint64_t decoded_ = 0;
  std::uint64_t sent_ = 0;        // redacted text given to the client (at most max_bytes)
  std::uint64_t sent_coded_ = 0;  // bytes given to the client, as coded (at most response_bytes)
  bool read_enough_ = false;
  const char* error_ = nullptr;
  bool unredactable_ = false;
  bool too_large_ = false;
  std::string text_;      // decoded text of the current piece
  std::string redacted_;  // redacted text waiting to be encoded
  std::string lead_;      // the text's first two bytes (a byte-order mark?)
};

}  // namespace airlock::filters::redaction
