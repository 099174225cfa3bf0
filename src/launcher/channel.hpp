#pragma once
// The launcher <-> jail synchronisation channel: one SOCK_SEQPACKET socketpair, so each
// message arrives whole and a dead peer reads as end-of-file. The jail waits for `go` (maps
// and cgroups are in place), sends the relay listener with `relay_fd`, and finally `ready`
// (the command is starting) or `failed` with the step that broke.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::launcher {

enum class message_type : std::uint8_t { go = 1, relay_fd, ready, failed };

struct message {
  message_type type = message_type::failed;
  std::uint32_t flags = 0;  // go: which limits the jail must apply as rlimits (limits.hpp)
  std::string text;         // failed: the reason
  int fd = -1;              // relay_fd: the received descriptor (owned by the receiver)
};

// Each returns false with the failure recorded (step.hpp). fd < 0: no descriptor attached.
bool send_message(int sock, message_type type, std::uint32_t flags = 0, std::string_view text = {},
                  int fd = -1);

// Blocks for the next message; nullopt on end-of-file or error.
std::optional<message> receive_message(int sock);

}  // namespace airlock::launcher
