#include "websocket/message_reader.hpp"

#include "core/str_cat.hpp"
#include "core/utf8.hpp"

namespace airlock::websocket {

message_reader::message_reader(sender from, std::uint64_t max_message, bool deflate)
    : from_(from), max_(max_message), deflate_(deflate) {
  if (deflate_) inflater_.emplace();
}

void message_reader::feed(std::string_view bytes) {
  if (error_) return;
  // Drop what was read before appending, so the buffer holds at most one frame.
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

event message_reader::fail(std::uint16_t code, std::string reason) {
  event e;
  e.what = event::kind::error;
  e.code = code;
  e.reason = std::move(reason);
  error_ = e;
  buffer_.clear();
  buffer_.shrink_to_fit();
  message_.clear();
  pos_ = 0;
  return e;
}

event message_reader::next() {
  // One frame per round; a fragment that does not end its message goes round again (a loop,
  // not recursion: a buffer may hold thousands of tiny fragments).
  for (;;) {
    if (error_) return *error_;
    auto e = next_frame();
    if (e.what != event::kind::need_more || !fragment_read_) return e;
    fragment_read_ = false;
  }
}

event message_reader::next_frame() {
  const std::string_view rest = std::string_view(buffer_).substr(pos_);
  const auto head = parse_head(rest);
  if (!head) return {};
  const frame_head& h = *head;
  const opcode op = h.op();
  const auto raw = h.raw_opcode;
  if ((raw >= 3 && raw <= 7) || raw >= 0xB)
    return fail(close_code::protocol_error, "reserved opcode");
  // RSV1 is permessage-deflate's, and only on a message's first frame (RFC 7692 section 6.1).
  if (h.rsv2 || h.rsv3 || (h.rsv1 && (!deflate_ || is_control(op) || op == opcode::continuation)))
    return fail(close_code::protocol_error, "reserved bit set");
  if (h.masked != (from_ == sender::client))
    return fail(close_code::protocol_error,
                from_ == sender::client ? "client frame not masked" : "server frame masked");
  if (is_control(op)) {
    if (!h.fin) return fail(close_code::protocol_error, "fragmented control frame");
    if (h.length > 125) return fail(close_code::protocol_error, "control frame over 125 bytes");
  } else if (op == opcode::continuation) {
    if (!in_message_) return fail(close_code::protocol_error, "continuation without a message");
  } else if (in_message_) {
    return fail(close_code::protocol_error, "new message inside a fragmented one");
  }
  // Compressed bytes are bounded by the limit too: inflating never makes them shorter by much.
  if (!is_control(op) && (h.length > max_ || message_.size() > max_ - h.length))
    return fail(close_code::too_big, core::str_cat("message over ", max_, " bytes"));
  if (rest.size() - h.head_size < h.length) return {};  // the payload is not all here yet
  std::string payload(rest.substr(h.head_size, h.length));
  pos_ += h.head_size + h.length;
  if (h.masked) apply_mask(payload.data(), payload.size(), h.mask);
  if (is_control(op)) return control(h, std::move(payload));
  if (!in_message_) {
    in_message_ = true;
    message_op_ = op;
    compressed_ = h.rsv1;
    message_.clear();
  }
  message_.append(payload);
  if (!h.fin) {
    fragment_read_ = true;
    return {};
  }
  return finish_message();
}

event message_reader::finish_message() {
  in_message_ = false;
  event e;
  e.what = event::kind::message;
  e.op = message_op_;
  e.compressed = compressed_;
  if (compressed_) {
    switch (inflater_->inflate(message_, max_, e.payload)) {
      case inflater::result::ok:
        break;
      case inflater::result::too_big:
        return fail(close_code::too_big,
                    core::str_cat("message inflates to over ", max_, " bytes"));
      case inflater::result::corrupt:
        return fail(close_code::invalid_data, "compressed message does not inflate");
    }
    message_.clear();
  } else {
    e.payload = std::move(message_);
    message_.clear();
  }
  // RFC 6455 section 8.1: a text message is UTF-8, checked once it is whole.
  if (e.op == opcode::text && !core::valid_utf8(e.payload))
    return fail(close_code::invalid_data, "text message is not UTF-8");
  return e;
}

event message_reader::control(const frame_head& h, std::string payload) {
  event e;
  e.what = event::kind::control;
  e.op = h.op();
  if (e.op == opcode::close) {
    // RFC 6455 section 5.5.1: empty, or a 2-byte code and a UTF-8 reason.
    if (payload.size() == 1) return fail(close_code::protocol_error, "close payload of one byte");
    if (payload.empty()) {
      e.code = close_code::no_status;
    } else {
      e.code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                          static_cast<std::uint8_t>(payload[1]));
      if (!valid_close_code(e.code)) return fail(close_code::protocol_error, "invalid close code");
      e.reason = payload.substr(2);
      if (!core::valid_utf8(e.reason))
        return fail(close_code::invalid_data, "close reason is not UTF-8");
    }
  }
  e.payload = std::move(payload);
  return e;
}

}  // namespace airlock::websocket
