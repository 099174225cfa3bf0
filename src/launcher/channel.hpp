#pragma once
// The launcher <-> jail synchronisation channel: one SOCK_SEQPACKET socketpair, so each
// message arrives whole and a dead peer reads as end-of-file. The jail waits for `go` (maps
// and cgroups are in place), sends the relay listener (and, with capture, the capture listeners
// and the resolver's socket) with `relay_fd`, a `notice` for the user where something optional
// could not be set up, and finally `ready` (the command is starting) or `failed` with the
// step that broke. After `go` the launcher sends `filter`: the compiled seccomp program
// (seccomp.hpp), or no descriptor when it could not compile it (the jail then tries itself).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::launcher {

enum class message_type : std::uint8_t { go = 1, relay_fd, ready, failed, notice, filter };

// What a relay_fd message carries, in its flags.
// terminal: the master of the pseudo-terminal the jail made for the command (terminal.hpp).
enum class socket_role : std::uint32_t { relay = 0, capture_v4, capture_v6, dns, terminal };

struct message {
  message_type type = message_type::failed;
  std::uint32_t flags = 0;  // go: which limits the jail must apply as rlimits (limits.hpp);
                            // relay_fd: the socket_role
  std::string text;         // failed: the reason; notice: a line for the user
  int fd = -1;              // relay_fd, filter: the received descriptor (owned by the receiver)
};

// Each returns false with the failure recorded (step.hpp). fd < 0: no descriptor attached.
bool send_message(int sock, message_type type, std::uint32_t flags = 0, std::string_view text = {},
                  int fd = -1);

// Blocks for the next message; nullopt on end-of-file or error.
std::optional<message> receive_message(int sock);

}  // namespace airlock::launcher
