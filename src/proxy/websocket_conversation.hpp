#pragma once
// The decisions of a WebSocket relay, without sockets: bytes read from either side go in, the
// bytes to write come out. Each side's frames are read by a websocket::message_reader (RFC 6455
// checked, permessage-deflate inflated, bounded by the rule's websocket.max_message_bytes);
// every whole message, and every ping and pong, goes through the chain's message hook
// (filters::chain::message) before anything of it is forwarded, re-framed (masked towards the
// origin, unmasked towards the client; never compressed, which RFC 7692 section 6 allows).
//
// A refused message never reaches the other side: both sides get close 1008, the agent's with
// a short reason whichever side sent it, the origin's only "closed by the proxy"; the relay
// ends. A frame that breaks the protocol
// gets its close code (1002, 1007, 1009) to the side that sent it and 1001 to the other.
//
// Close frames pass through (their reasons checked). Once a side has sent its Close, what it
// sends after is discarded unread: RFC 6455 section 5.5.1 forbids data after a Close, and
// section 1.4 has the receiver discard it. Not a protocol error: that side has closed, and a
// second Close (1002) would break the rule it broke. Once both Closes have passed, the
// conversation has ended and the relay (websocket_relay.hpp) closes the connection. A side
// that already got a Close gets no second one from the proxy.
//
// The exchange's record carries the summary (one audit line for the whole connection): who
// sent the first Close and its code, and the code of the Close that answered it.
//
// @par Thread Safety
// Used by one session on one thread.

#include "filters/chain.hpp"
#include "websocket/message_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::proxy {

class websocket_conversation {
 public:
  // `deflate`: the two ends agreed permessage-deflate (the 101's Sec-WebSocket-Extensions).
  websocket_conversation(filters::chain& chain, std::uint64_t max_message, bool deflate);

  struct output {
    std::string to_other;   // bytes for the other side
    std::string to_sender;  // bytes back to the side that sent (a close)
  };
  // What one on_bytes call appends before it stops and leaves the rest for the next call.
  static constexpr std::size_t output_bound = 64 * 1024;

  // Bytes read from `from` (empty: go on with what was fed before); what to write is appended
  // to `out`. Returns true when it stopped because `out` reached output_bound: whole frames
  // may be left unread, and the caller writes `out` and then calls again with no bytes before
  // it reads more from `from`. One read of compressed frames may hold dozens of messages that
  // each inflate to max_message bytes; taken a round at a time, `out` never holds more than
  // output_bound plus one message (and the closes), and a receiver that does not read stops
  // the reading from the sender after one round (docs/policy.md#websocket-messages).
  bool on_bytes(filters::message_from from, std::string_view bytes, output& out);

  // A message was refused or a side broke the protocol (the proxy sent the closes), or both
  // sides' Closes have passed: nothing more is forwarded.
  bool ended() const noexcept { return ended_; }
  // Both sides' Closes have passed: the closing handshake is complete (RFC 6455 section 7.1.2).
  bool closing_handshake_done() const noexcept {
    return sent_close(filters::message_from::client) && sent_close(filters::message_from::origin);
  }

 private:
  void on_event(filters::message_from from, websocket::event& e, output& out);
  void pass_close(filters::message_from from, const websocket::event& e, output& out);
  // Ends the connection: a Close with `sender_code` and `sender_reason` to the side whose
  // frame ended it, one with `other_code` and `other_reason` to the other side.
  void end(filters::message_from from, std::uint16_t sender_code, std::uint16_t other_code,
           std::string_view sender_reason, std::string_view other_reason, output& out);
  void protocol_error(filters::message_from from, const websocket::event& e, output& out);

  filters::chain& chain_;
  filters::exchange_record::websocket_summary& summary_;
  websocket::message_reader from_client_;
  websocket::message_reader from_origin_;
  bool ended_ = false;
  // Per side (client, origin): it sent a Close; it was sent one (by the other side or the proxy).
  bool sent_close_[2] = {false, false};
  bool got_close_[2] = {false, false};
  bool sent_close(filters::message_from from) const noexcept {
    return sent_close_[static_cast<int>(from)];
  }
};

// A short close reason for a refusal: the reason's name and its detail, cut to fit a close
// frame (RFC 6455 section 5.5: 123 bytes of reason).
std::string refusal_close_reason(const filters::exchange_record& rec);

}  // namespace airlock::proxy
