#pragma once
// The jail's network namespace: nothing but loopback, brought up, and the relay's listening
// socket on 127.0.0.1:PORT. Both run in the jail's first process; the socket is then passed
// to the launcher (channel.hpp), which accepts on it from the host namespace.

#include <cstdint>

namespace airlock::launcher {

// ioctl(SIOCSIFFLAGS, "lo", IFF_UP) in the current network namespace (netdevice(7)).
bool bring_up_loopback();

// A listening TCP socket on 127.0.0.1:port (close-on-exec), or -1 with the failure recorded.
// Port 0 picks a free one (local_port tells which).
int listen_on_loopback(std::uint16_t port);

// The same on [::1]:port (IPv6 only), or -1 with the failure recorded (no IPv6 in the jail).
int listen_on_loopback6(std::uint16_t port);

// A UDP socket bound to 127.0.0.1:port (close-on-exec), or -1 with the failure recorded.
int udp_on_loopback(std::uint16_t port);

// The port a socket is bound to; 0 when it cannot tell.
std::uint16_t local_port(int fd);

}  // namespace airlock::launcher
