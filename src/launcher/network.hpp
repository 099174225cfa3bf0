#pragma once
// The jail's network namespace: nothing but loopback, brought up, and the relay's listening
// socket on 127.0.0.1:PORT. Both run in the jail's first process; the socket is then passed
// to the launcher (channel.hpp), which accepts on it from the host namespace.

#include <cstdint>

namespace airlock::launcher {

// ioctl(SIOCSIFFLAGS, "lo", IFF_UP) in the current network namespace (netdevice(7)).
bool bring_up_loopback();

// A listening TCP socket on 127.0.0.1:port (close-on-exec), or -1 with the failure recorded.
int listen_on_loopback(std::uint16_t port);

}  // namespace airlock::launcher
