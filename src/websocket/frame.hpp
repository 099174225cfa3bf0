#pragma once
// WebSocket frames (RFC 6455 section 5): the opcodes, the close codes the proxy uses, a frame
// head parser and a frame writer. No I/O; message_reader.hpp assembles messages from frames.
//
// @par Thread Safety
// Plain functions on values.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::websocket {

// RFC 6455 section 5.2 (opcodes 3-7 and 0xB-0xF are reserved).
enum class opcode : std::uint8_t {
  continuation = 0x0,
  text = 0x1,
  binary = 0x2,
  close = 0x8,
  ping = 0x9,
  pong = 0xA,
};

inline bool is_control(opcode op) noexcept {
  return (static_cast<std::uint8_t>(op) & 0x8) != 0;
}

// RFC 6455 section 7.4.1.
namespace close_code {
inline constexpr std::uint16_t normal = 1000;
inline constexpr std::uint16_t going_away = 1001;
inline constexpr std::uint16_t protocol_error = 1002;
inline constexpr std::uint16_t no_status = 1005;  // never sent: "the close frame had no code"
inline constexpr std::uint16_t invalid_data = 1007;
inline constexpr std::uint16_t policy_violation = 1008;
inline constexpr std::uint16_t too_big = 1009;
inline constexpr std::uint16_t internal_error = 1011;
}  // namespace close_code

// Whether `code` may appear in a close frame (RFC 6455 section 7.4: 1000-1003, 1007-1011 and the
// registered/private ranges 3000-4999; 1004-1006 and 1015 are reserved and never sent).
bool valid_close_code(std::uint16_t code) noexcept;

// Who sends the frames: a client masks every frame, a server none (RFC 6455 section 5.1).
enum class sender : std::uint8_t { client, server };

struct frame_head {
  bool fin = false;
  bool rsv1 = false;  // permessage-deflate: the message is compressed (RFC 7692 section 6)
  bool rsv2 = false;
  bool rsv3 = false;
  std::uint8_t raw_opcode = 0;
  bool masked = false;
  std::uint8_t mask[4] = {0, 0, 0, 0};
  std::uint64_t length = 0;
  std::size_t head_size = 0;  // bytes of the head (2 to 14)

  opcode op() const noexcept { return static_cast<opcode>(raw_opcode); }
};

// Parses a frame head from the start of `bytes`: nullopt while it is incomplete. Checks nothing
// beyond the encoding (message_reader checks the rules); a 64-bit length with its top bit set
// is returned as is (the reader refuses it as too big).
std::optional<frame_head> parse_head(std::string_view bytes) noexcept;

// XORs `data` with `mask`, starting at `offset` bytes into the masked payload.
void apply_mask(char* data, std::size_t size, const std::uint8_t (&mask)[4],
                std::size_t offset = 0) noexcept;

// One whole frame (FIN set, RSV bits clear). `masked`: a client's frame, masked with a fresh
// key from the kernel's random source (RFC 6455 section 10.3: the key must be unpredictable).
std::string encode_frame(opcode op, std::string_view payload, bool masked);
// The same frame, appended to `out`.
void append_frame(std::string& out, opcode op, std::string_view payload, bool masked);

// A close frame's payload: the code (network order) and a reason, cut to fit the 125 bytes of a
// control frame at a UTF-8 boundary.
std::string close_payload(std::uint16_t code, std::string_view reason);

}  // namespace airlock::websocket
