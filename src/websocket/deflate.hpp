#pragma once
// permessage-deflate (RFC 7692): what the two ends agreed in Sec-WebSocket-Extensions, and the
// raw inflater that reads a compressed message bounded by the message limit (a decompression
// bomb stops at the limit instead of filling memory).
//
// The proxy never compresses what it forwards: RFC 7692 section 6 lets a sender leave any
// message uncompressed (RSV1 clear), so each end keeps its agreement and the relay needs no
// deflater with a context of its own.
//
// @par Thread Safety
// An inflater is used by one connection direction on one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::websocket {

struct deflate_params {
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  int server_max_window_bits = 15;
  int client_max_window_bits = 15;
};

// The server's Sec-WebSocket-Extensions answer. Empty: no extension (nullopt params, ok).
struct negotiation {
  bool ok = true;  // false: an extension or parameter the proxy does not understand
  std::optional<deflate_params> deflate;
};
negotiation negotiated(std::string_view header);

// The client's offer with every extension other than permessage-deflate left out (the relay
// could not read frames whose RSV bits mean something else); empty when nothing is left.
std::string deflate_offers(std::string_view header);

class inflater {
 public:
  inflater();
  ~inflater();
  inflater(const inflater&) = delete;
  inflater& operator=(const inflater&) = delete;

  enum class result : std::uint8_t { ok, too_big, corrupt };
  // Inflates one message (the payloads of its frames, joined) into `out` (replaced). More than
  // `limit` bytes of output: too_big, and inflating stops there. The window is kept between
  // messages (right whether or not the sender takes its context over, RFC 7692 section 7.1.1).
  result inflate(std::string_view message, std::uint64_t limit, std::string& out);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace airlock::websocket
