#include "launcher/address.hpp"

#include "core/str_cat.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstddef>
#include <cstring>

namespace airlock::launcher {

std::optional<socket_address> parse_host_port(std::string_view text) {
  std::string_view host, port_text;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return std::nullopt;
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // bare IPv6: use [..]
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535 || port_text.empty())
    return std::nullopt;
  if (host == "localhost") host = "127.0.0.1";
  const std::string h(host);
  socket_address out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    out.length = sizeof(sockaddr_in);
    return out;
  }
  if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    out.length = sizeof(sockaddr_in6);
    return out;
  }
  return std::nullopt;
}

std::optional<std::string_view> unix_path_of(std::string_view text) {
  constexpr std::string_view prefix = "unix:";
  if (!text.starts_with(prefix)) return std::nullopt;
  return text.substr(prefix.size());
}

std::optional<socket_address> parse_proxy_address(std::string_view text) {
  auto path = unix_path_of(text);
  if (!path) return parse_host_port(text);
  socket_address out;
  auto* un = reinterpret_cast<sockaddr_un*>(&out.storage);
  // Absolute: the launcher's working directory means nothing to whoever reads the message.
  if (path->empty() || path->front() != '/' || path->size() >= sizeof un->sun_path ||
      path->find('\0') != std::string_view::npos)
    return std::nullopt;
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path->data(), path->size());
  out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path->size() + 1);
  return out;
}

std::string to_string(const socket_address& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family() == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a.storage);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    return core::str_cat(buf, ':', ntohs(v4->sin_port));
  }
  if (a.family() == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    return core::str_cat('[', buf, "]:", ntohs(v6->sin6_port));
  }
  if (a.family() == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&a.storage);
    return core::str_cat("unix:", std::string_view(un->sun_path));
  }
  return "?";
}

}  // namespace airlock::launcher
