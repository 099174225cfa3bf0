#pragma once
// "127.0.0.1:3128", "[::1]:3128", "localhost:3128" -> a socket address. No DNS: the proxy
// runs next to the launcher, so a literal address (or localhost) is all it needs, and a
// lookup at start would be one more thing that can hang or lie.

#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

namespace airlock::launcher {

struct socket_address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const noexcept { return storage.ss_family; }
  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
};

std::optional<socket_address> parse_host_port(std::string_view text);

// "127.0.0.1:3128" / "[::1]:3128" for messages.
std::string to_string(const socket_address& a);

}  // namespace airlock::launcher
