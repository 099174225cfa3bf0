#include "proxy/websocket_conversation.hpp"

#include "core/str_cat.hpp"

namespace airlock::proxy {
namespace ws = websocket;
using filters::message_from;

namespace {

std::string_view side(message_from from) {
  return from == message_from::client ? "client" : "origin";
}

message_from other(message_from from) {
  return from == message_from::client ? message_from::origin : message_from::client;
}

int index(message_from from) {
  return static_cast<int>(from);
}

filters::exchange_record::websocket_summary& summary_of(filters::exchange& ex) {
  ex.record.protocol = "websocket";
  if (!ex.record.websocket) ex.record.websocket.emplace();
  return *ex.record.websocket;
}

}  // namespace

// What a side is told that did not cause the end.
constexpr std::string_view kClosedByProxy = "closed by the proxy";

std::string refusal_close_reason(const filters::exchange_record& rec) {
  std::string why = core::str_cat(core::name(rec.reason), ": ", rec.detail);
  // close_payload cuts at a character boundary; the detail names no request value.
  return why;
}

websocket_conversation::websocket_conversation(filters::chain& chain, std::uint64_t max_message,
                                               bool deflate)
    : chain_(chain),
      summary_(summary_of(chain.ex())),
      from_client_(ws::sender::client, max_message, deflate),
      from_origin_(ws::sender::server, max_message, deflate) {}

bool websocket_conversation::on_bytes(message_from from, std::string_view bytes, output& out) {
  // After its Close a side sends nothing more (RFC 6455 section 5.5.1); what it sends anyway
  // is discarded unread, as section 1.4 has a receiver do, here and from the rest of a read
  // that held the Close.
  if (ended_ || sent_close(from)) return false;
  auto& reader = from == message_from::client ? from_client_ : from_origin_;
  if (!bytes.empty()) reader.feed(bytes);
  // Bounded: each event consumes a frame from what was fed, or ends the loop; and the output
  // of one call is bounded too (see output_bound).
  while (!ended_ && !sent_close(from)) {
    if (out.to_other.size() + out.to_sender.size() >= output_bound) return true;
    auto e = reader.next();
    if (e.what == ws::event::kind::need_more) return false;
    on_event(from, e, out);
  }
  return false;
}

void websocket_conversation::on_event(message_from from, ws::event& e, output& out) {
  using kind = ws::event::kind;
  // Frames towards the origin are a client's, so masked (RFC 6455 section 5.1).
  const bool mask_other = from == message_from::client;
  if (e.what == kind::error) return protocol_error(from, e, out);
  // A close frame's reason is the sender's text (RFC 6455 section 5.5.1): it goes through the
  // chain (opcode 8, the reason as payload), and a refusal ends the connection the same way.
  const bool close = e.what == kind::control && e.op == ws::opcode::close;
  const filters::message m{from, static_cast<std::uint8_t>(e.op),
                           close ? std::string_view(e.reason) : std::string_view(e.payload)};
  if ((!close || !e.reason.empty()) && !chain_.message(m).passes()) {
    summary_.refused_from = side(from);
    // The agent learns why, whichever side's message was refused; the origin only that the
    // proxy ended the connection.
    const std::string why = refusal_close_reason(chain_.ex().record);
    const bool from_client = from == message_from::client;
    return end(from, ws::close_code::policy_violation, ws::close_code::policy_violation,
               from_client ? why : kClosedByProxy, from_client ? kClosedByProxy : why, out);
  }
  if (close) return pass_close(from, e, out);
  if (e.what == kind::message)
    ++(from == message_from::client ? summary_.client_messages : summary_.origin_messages);
  // Framed in place: an inflated message is max_message bytes, held once more, not twice.
  ws::append_frame(out.to_other, e.op, e.payload, mask_other);
}

void websocket_conversation::pass_close(message_from from, const ws::event& e, output& out) {
  const std::uint16_t code = e.code == ws::close_code::no_status ? 0 : e.code;
  // The record names who started the closing handshake, not whose Close came last: the answer
  // is kept beside it.
  if (summary_.closed_by.empty()) {
    summary_.close_code = code;
    summary_.closed_by = side(from);
  } else {
    summary_.close_reply_code = code;
  }
  sent_close_[index(from)] = true;
  got_close_[index(other(from))] = true;
  out.to_other += ws::encode_frame(ws::opcode::close, e.payload, from == message_from::client);
  if (closing_handshake_done()) ended_ = true;
}

void websocket_conversation::protocol_error(message_from from, const ws::event& e, output& out) {
  auto& rec = chain_.ex().record;
  const bool too_big = e.code == ws::close_code::too_big;
  const std::string detail = core::str_cat("websocket ", side(from), ": ", e.reason);
  if (from == message_from::client) {
    rec.refuse(too_big ? core::errc::body_too_large : core::errc::bad_request, detail);
  } else {
    rec.failed_upstream(too_big ? core::errc::response_too_large : core::errc::upstream_error);
    rec.detail = detail;
  }
  end(from, e.code, ws::close_code::going_away, e.reason, kClosedByProxy, out);
}

void websocket_conversation::end(message_from from, std::uint16_t sender_code,
                                 std::uint16_t other_code, std::string_view sender_reason,
                                 std::string_view other_reason, output& out) {
  ended_ = true;
  // During a closing handshake the record keeps the first Close; the proxy's close is then the
  // answer to it. (The sender here is never the side that closed first: nothing of that side
  // is read after its Close.)
  if (summary_.closed_by.empty()) {
    summary_.close_code = sender_code;
    summary_.closed_by = "proxy";
  } else {
    summary_.close_reply_code = other_code;
  }
  const bool to_origin_masked = true;
  const bool sender_is_client = from == message_from::client;
  // A side that already got a Close gets no second one (RFC 6455 section 5.5.1: one Close, then
  // nothing).
  if (!got_close_[index(from)])
    out.to_sender +=
        ws::encode_frame(ws::opcode::close, ws::close_payload(sender_code, sender_reason),
                         sender_is_client ? false : to_origin_masked);
  if (!got_close_[index(other(from))])
    out.to_other += ws::encode_frame(ws::opcode::close, ws::close_payload(other_code, other_reason),
                                     sender_is_client ? to_origin_masked : false);
  got_close_[0] = got_close_[1] = true;
}

}  // namespace airlock::proxy
