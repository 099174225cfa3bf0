#include "websocket/frame.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace airlock::websocket {

bool valid_close_code(std::uint16_t code) noexcept {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
         (code >= 3000 && code <= 4999);
}

std::optional<frame_head> parse_head(std::string_view bytes) noexcept {
  if (bytes.size() < 2) return std::nullopt;
  const auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  frame_head h;
  h.fin = (b(0) & 0x80) != 0;
  h.rsv1 = (b(0) & 0x40) != 0;
  h.rsv2 = (b(0) & 0x20) != 0;
  h.rsv3 = (b(0) & 0x10) != 0;
  h.raw_opcode = b(0) & 0x0F;
  h.masked = (b(1) & 0x80) != 0;
  std::size_t pos = 2;
  const std::uint8_t len7 = b(1) & 0x7F;
  // RFC 6455 section 5.2: 126 = a 16-bit length follows, 127 = a 64-bit one.
  const std::size_t extra = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
  if (bytes.size() < pos + extra + (h.masked ? 4 : 0)) return std::nullopt;
  if (extra == 0) {
    h.length = len7;
  } else {
    for (std::size_t i = 0; i < extra; ++i)
      h.length = (h.length << 8) | b(pos + i);
  }
  pos += extra;
  if (h.masked) {
    for (std::size_t i = 0; i < 4; ++i)
      h.mask[i] = b(pos + i);
    pos += 4;
  }
  h.head_size = pos;
  return h;
}

void apply_mask(char* data, std::size_t size, const std::uint8_t (&mask)[4],
                std::size_t offset) noexcept {
  for (std::size_t i = 0; i < size; ++i)
    data[i] = static_cast<char>(static_cast<std::uint8_t>(data[i]) ^ mask[(offset + i) & 3]);
}

std::string encode_frame(opcode op, std::string_view payload, bool masked) {
  std::string out;
  append_frame(out, op, payload, masked);
  return out;
}

void append_frame(std::string& out, opcode op, std::string_view payload, bool masked) {
  out.reserve(out.size() + payload.size() + 14);
  out.push_back(static_cast<char>(0x80 | static_cast<std::uint8_t>(op)));
  const std::uint8_t mask_bit = masked ? 0x80 : 0;
  const std::uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((n >> shift) & 0xFF));
  }
  std::uint8_t key[4] = {0, 0, 0, 0};
  if (masked) {
    // getrandom(2) with no flags blocks only before the pool is initialised at boot.
    if (getrandom(key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) {
      // Never observed; a fixed key is still a valid frame (only less protective of caches).
      std::memcpy(key, "\x5a\xa5\x3c\xc3", 4);
    }
    out.append(reinterpret_cast<const char*>(key), 4);
  }
  const std::size_t start = out.size();
  out.append(payload);
  if (masked) apply_mask(out.data() + start, payload.size(), key);
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
  std::string out;
  out.push_back(static_cast<char>(code >> 8));
  out.push_back(static_cast<char>(code & 0xFF));
  // A control frame carries at most 125 bytes (RFC 6455 section 5.5); never cut a UTF-8
  // sequence (its continuation bytes are 10xxxxxx).
  std::size_t n = std::min<std::size_t>(reason.size(), 123);
  while (n > 0 && n < reason.size() && (static_cast<std::uint8_t>(reason[n]) & 0xC0) == 0x80)
    --n;
  out.append(reason.substr(0, n));
  return out;
}

}  // namespace airlock::websocket
