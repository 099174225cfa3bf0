#include "launcher/relay_connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <array>
#include <cstring>

namespace airlock::launcher::relay_io {
namespace proxy_v2 = net::proxy_v2;

proxy_v2::endpoint to_endpoint(const sockaddr_storage& ss) {
  proxy_v2::endpoint e;
  if (ss.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    e.v6 = true;
    std::memcpy(e.addr.data(), &v6->sin6_addr, 16);
    e.port = ntohs(v6->sin6_port);
  } else {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    std::memcpy(e.addr.data(), &v4->sin_addr, 4);
    e.port = ntohs(v4->sin_port);
  }
  return e;
}

io classify_read(ssize_t r, std::atomic<std::uint64_t>& counter) {
  if (r == 0) return io::eof;
  if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? io::again : io::error;
  counter.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
  return io::ok;
}

io write_from(int fd, buffer& b) {
  const auto p = b.pending();
  if (p.empty()) return io::ok;
  ssize_t w;
  do {
    w = ::send(fd, p.data(), p.size(), MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? io::again : io::error;
  b.consumed(static_cast<std::size_t>(w));
  return io::ok;
}

void close_connection(connection& c) {
  if (c.client >= 0) ::close(c.client);
  if (c.upstream >= 0) ::close(c.upstream);
  c.client = c.upstream = -1;
  c.dead = true;
}

void reset_fd(int fd) {
  const linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

void reset_connection(connection& c) {
  if (c.client >= 0) reset_fd(c.client);
  c.client = -1;
  close_connection(c);
}

std::optional<std::string> target_of(const sockaddr_storage& dst, const name_pool& pool) {
  char text[INET6_ADDRSTRLEN] = {};
  if (dst.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&dst);
    std::array<std::uint8_t, 4> a;
    std::memcpy(a.data(), &v4->sin_addr, 4);
    const std::uint16_t port = ntohs(v4->sin_port);
    if (a[0] == 127 || port == 0) return std::nullopt;
    if (name_pool::in_v4_pool(a)) {
      auto name = pool.name_of_v4(a);
      if (!name) return std::nullopt;
      return capture::authority(*name, port);
    }
    ::inet_ntop(AF_INET, a.data(), text, sizeof text);
    return capture::authority(text, port);
  }
  if (dst.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&dst);
    std::array<std::uint8_t, 16> a;
    std::memcpy(a.data(), &v6->sin6_addr, 16);
    const std::uint16_t port = ntohs(v6->sin6_port);
    if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr) || port == 0) return std::nullopt;
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      sockaddr_storage mapped{};
      auto* v4 = reinterpret_cast<sockaddr_in*>(&mapped);
      v4->sin_family = AF_INET;
      v4->sin_port = v6->sin6_port;
      std::memcpy(&v4->sin_addr, a.data() + 12, 4);
      return target_of(mapped, pool);
    }
    if (name_pool::in_v6_pool(a)) {
      auto name = pool.name_of_v6(a);
      if (!name) return std::nullopt;
      return capture::authority(*name, port);
    }
    ::inet_ntop(AF_INET6, a.data(), text, sizeof text);
    return capture::authority(text, port);
  }
  return std::nullopt;
}

}  // namespace airlock::launcher::relay_io
