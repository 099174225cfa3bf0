#pragma once
// Reads one direction of a WebSocket connection: bytes in, whole messages and control frames
// out, every rule of RFC 6455 checked on the way (and of RFC 7692 when permessage-deflate was
// agreed). A violation ends the reading with the close code the peer is owed:
//   1002  masking wrong for the sender (section 5.1), reserved bits or opcodes (5.2), a control
//         frame fragmented or over 125 bytes (5.5), a continuation with no message or a new
//         message inside one (5.4), a bad close payload (5.5.1, 7.4);
//   1007  a text message (or close reason) that is not UTF-8 (8.1), a compressed message that
//         does not inflate;
//   1009  a message (as sent, or inflated) over the limit (7.4.1).
// A message is held until it is complete, so that it can be checked whole before any of it is
// forwarded; the limit bounds what is held.
//
// @par Thread Safety
// One reader per direction, used on one thread.

#include "websocket/deflate.hpp"
#include "websocket/frame.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::websocket {

struct event {
  enum class kind : std::uint8_t {
    need_more,  // feed more bytes
    message,    // a whole text or binary message (unmasked, inflated)
    control,    // a ping, pong or close frame (for close: code and reason below)
    error,      // a violation: close with `code` and `reason`; read nothing more
  };
  kind what = kind::need_more;
  opcode op = opcode::binary;
  std::string payload;      // message or control payload
  std::uint16_t code = 0;   // close: the code sent (no_status when none); error: the code owed
  std::string reason;       // close: the reason sent; error: what was wrong (names no content)
  bool compressed = false;  // the message came compressed
};

class message_reader {
 public:
  // `from`: who sends what this reader reads. `deflate`: permessage-deflate was agreed.
  message_reader(sender from, std::uint64_t max_message, bool deflate);

  // Appends bytes read from the connection.
  void feed(std::string_view bytes);
  // The next event from what was fed: need_more when nothing complete is there yet. After an
  // error, always that error.
  event next();

  // Bytes fed but not yet read as events (bounded by the limit plus one frame head).
  std::size_t buffered() const noexcept { return buffer_.size() - pos_; }

 private:
  event next_frame();
  event fail(std::uint16_t code, std::string reason);
  event finish_message();
  event control(const frame_head& h, std::string payload);

  sender from_;
  std::uint64_t max_;
  bool deflate_;
  std::string buffer_;
  std::size_t pos_ = 0;
  // The message being assembled from its frames.
  bool in_message_ = false;
  opcode message_op_ = opcode::binary;
  bool compressed_ = false;
  std::string message_;
  std::optional<inflater> inflater_;
  std::optional<event> error_;
  bool fragment_read_ = false;  // next_frame() read a fragment: look for the next frame
};

}  // namespace airlock::websocket
