#include "launcher/network.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace airlock::launcher {

bool bring_up_loopback() {
  // ioctl rather than rtnetlink: one request, no message parsing, and enough for one flag.
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return step_failed("socket(AF_INET, SOCK_DGRAM)");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = true;
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
    ok = step_failed("ioctl(lo, SIOCGIFFLAGS)");
  } else {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) ok = step_failed("ioctl(lo, SIOCSIFFLAGS, IFF_UP)");
  }
  ::close(fd);
  return ok;
}

int listen_on_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    step_failed("socket(AF_INET, SOCK_STREAM)");
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    step_failed(core::str_cat("bind(127.0.0.1:", port, ')'));
    ::close(fd);
    return -1;
  }
  if (::listen(fd, 128) != 0) {
    step_failed("listen(relay)");
    ::close(fd);
    return -1;
  }
  return fd;
}

int listen_on_loopback6(std::uint16_t port) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    step_failed("socket(AF_INET6, SOCK_STREAM)");
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(port);
  addr.sin6_addr = in6addr_loopback;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 128) != 0) {
    step_failed(core::str_cat("bind/listen([::1]:", port, ')'));
    ::close(fd);
    return -1;
  }
  return fd;
}

int udp_on_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    step_failed("socket(AF_INET, SOCK_DGRAM)");
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    step_failed(core::str_cat("bind(udp 127.0.0.1:", port, ')'));
    ::close(fd);
    return -1;
  }
  return fd;
}

std::uint16_t local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

}  // namespace airlock::launcher
