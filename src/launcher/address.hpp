#pragma once
// "127.0.0.1:3128", "[::1]:3128", "localhost:3128" -> a socket address. No DNS: the proxy
// runs next to the launcher, so a literal address (or localhost) is all it needs, and a
// lookup at start would be one more thing that can hang or lie. The proxy's relay listener
// may also be a Unix socket, "unix:/path" (unix(7)), which file permissions protect.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

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

// What --proxy accepts: parse_host_port's forms, or "unix:/absolute/path" (at most 107 bytes,
// the size of sun_path less its terminating NUL; no abstract names).
std::optional<socket_address> parse_proxy_address(std::string_view text);

// The path of a "unix:/path" address, or nullopt for anything else.
std::optional<std::string_view> unix_path_of(std::string_view text);

// "127.0.0.1:3128" / "[::1]:3128" / "unix:/path" for messages.
std::string to_string(const socket_address& a);

}  // namespace airlock::launcher
