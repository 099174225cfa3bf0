#pragma once
// The jail's side of transparent capture, set up by its first process while it still holds
// CAP_NET_ADMIN in its own network namespace (user_namespaces(7)); nothing here touches the
// host's network. Two kernel facilities, one file each:
//
//   routes.cpp    an address on lo besides loopback's (for getaddrinfo's AI_ADDRCONFIG), and
//                 a routing rule that sends TCP, and only TCP, to a table whose default
//                 route is the loopback device (ip-rule(8) `ipproto`, Linux 4.17). UDP, ICMP
//                 and every other protocol still find no route: sending fails with
//                 ENETUNREACH, as without capture.
//   nftables.cpp  a nat chain on the output hook that redirects each such TCP connection (to
//                 any address but loopback) to the relay's capture listener; the relay reads
//                 the original destination with SO_ORIGINAL_DST.
//
// Both talk netlink directly (netlink.hpp). Each returns false with the failure recorded
// (step.hpp).

#include <cstdint>

namespace airlock::launcher {

// For IPv4: ip address add 198.18.0.0/32 dev lo (so that getaddrinfo's AI_ADDRCONFIG sees
// IPv4 configured); ip rule add ipproto tcp lookup <table>; ip route add default dev lo src
// 127.0.0.1 table <table>. For IPv6 (ipv6 true) the same with fd61:6972:6c6b::/128 and a
// local default route on lo, src ::1.
bool route_tcp_to_loopback(bool ipv6);

// table ip airlock { chain capture { type nat hook output priority -100;
//   ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :port } }, and for IPv6 the same
// with ip6 daddr != ::1.
bool redirect_tcp_to(std::uint16_t port, bool ipv6);

// What the jail hands to the relay when capture is set up (descriptors it owns until sent).
struct capture_sockets {
  int v4 = -1;   // capture listener, 127.0.0.1:<free port>
  int v6 = -1;   // the same port on [::1]; -1 without IPv6 (then only IPv4 is captured)
  int dns = -1;  // the resolver's socket, udp 127.0.0.1:53
  void close_all();
};

// capture_setup.cpp: the listeners, the resolver's socket, the redirect and the routes, in
// that order (the routes make capture live, so they come last: a failure before them leaves
// the jail as it was without capture). False with the failure recorded and nothing left open.
bool set_up_capture(capture_sockets& out);

}  // namespace airlock::launcher
