// Transparent capture, set up in the jail's first process (capture_net.hpp).
#include "core/log.hpp"
#include "launcher/capture_net.hpp"
#include "launcher/network.hpp"
#include "launcher/step.hpp"

#include <unistd.h>

#include <string>

namespace airlock::launcher {

void capture_sockets::close_all() {
  for (int* fd : {&v4, &v6, &dns}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

bool set_up_capture(capture_sockets& out) {
  // A free port: no fixed one can collide with a server the command starts later.
  out.v4 = listen_on_loopback(0);
  if (out.v4 < 0) return false;
  const std::uint16_t port = local_port(out.v4);
  out.v6 = listen_on_loopback6(port);
  if (out.v6 < 0) {
    const std::string why = last_step_error();
    AIRLOCK_LOG(debug, "launcher", "capture: IPv4 only (", why, ')');
  }
  // Port 53 needs CAP_NET_BIND_SERVICE, which this process holds in the jail's namespaces.
  out.dns = udp_on_loopback(53);
  if (out.dns < 0) {
    out.close_all();
    return false;
  }
  bool ipv6 = out.v6 >= 0;
  if (!redirect_tcp_to(port, ipv6)) {
    // An nf_tables without IPv6 nat still serves IPv4.
    if (!ipv6 || !redirect_tcp_to(port, false)) {
      out.close_all();
      return false;
    }
    ipv6 = false;
  }
  if (!route_tcp_to_loopback(false)) {
    out.close_all();
    return false;
  }
  if (ipv6 && !route_tcp_to_loopback(true)) {
    // IPv4 is live already; IPv6 simply keeps having no route.
    AIRLOCK_LOG(debug, "launcher", "capture: IPv4 only (", last_step_error(), ')');
    ipv6 = false;
  }
  if (!ipv6 && out.v6 >= 0) {
    ::close(out.v6);
    out.v6 = -1;
  }
  return true;
}

}  // namespace airlock::launcher
