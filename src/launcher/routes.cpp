// Routing for transparent capture (capture_net.hpp): rtnetlink(7) RTM_NEWADDR, RTM_NEWRULE
// and RTM_NEWROUTE, as `ip address`, `ip rule` and `ip route` would send them.
#include "launcher/capture_net.hpp"
#include "launcher/name_pool.hpp"
#include "launcher/netlink.hpp"

#include <linux/if_addr.h>

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace airlock::launcher {
namespace {

// Any table but the kernel's own (local 255, main 254, default 253) would do.
constexpr std::uint8_t capture_table = 100;
// Before `main` (32766); `local` (0) comes first, so loopback stays loopback.
constexpr std::uint32_t rule_priority = 100;

template <typename T>
std::span<const std::uint8_t> as_bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof v};
}

bool add_rule_and_route(int family) {
  const unsigned lo = ::if_nametoindex("lo");
  netlink::request req;
  constexpr std::uint16_t create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;

  // An address besides loopback's own: glibc's getaddrinfo with AI_ADDRCONFIG (curl, Node's
  // dns.lookup, the default without hints) returns no IPv4 (IPv6) result on a system whose
  // only such address is 127.0.0.1 (::1) (sysdeps/unix/sysv/linux/check_pf.c). The pool's
  // network address is never handed out, so nothing mistakes it for a name's.
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<std::uint8_t>(family);
  ifa.ifa_prefixlen = family == AF_INET ? 32 : 128;
  ifa.ifa_flags = IFA_F_NODAD | IFA_F_PERMANENT;
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_index = lo;
  req.begin(RTM_NEWADDR, create, as_bytes(ifa));
  if (family == AF_INET) {
    const auto& b = name_pool::v4_base;
    req.attr(IFA_LOCAL, b);
    req.attr(IFA_ADDRESS, b);
  } else {
    std::array<std::uint8_t, 16> a{};
    std::copy(name_pool::v6_prefix.begin(), name_pool::v6_prefix.end(), a.begin());
    req.attr(IFA_ADDRESS, a);
  }
  req.end();

  fib_rule_hdr rule{};
  rule.family = static_cast<std::uint8_t>(family);
  rule.table = capture_table;
  rule.action = FR_ACT_TO_TBL;
  req.begin(RTM_NEWRULE, create, as_bytes(rule));
  req.attr_u32(FRA_PRIORITY, rule_priority);
  req.attr_u32(FRA_TABLE, capture_table);
  req.attr_u8(FRA_IP_PROTO, IPPROTO_TCP);
  req.end();

  rtmsg route{};
  route.rtm_family = static_cast<std::uint8_t>(family);
  route.rtm_table = capture_table;
  route.rtm_protocol = RTPROT_STATIC;
  if (family == AF_INET) {
    // A unicast route out of lo, with 127.0.0.1 as the source: the nat hook then rewrites
    // the destination to the capture listener before the packet loops back.
    route.rtm_scope = RT_SCOPE_LINK;
    route.rtm_type = RTN_UNICAST;
  } else {
    // IPv6 turns unicast routes via lo into reject routes on many kernels
    // (ip6_route_info_create); a local route is accepted everywhere and works the same.
    route.rtm_scope = RT_SCOPE_HOST;
    route.rtm_type = RTN_LOCAL;
  }
  req.begin(RTM_NEWROUTE, create, as_bytes(route));
  req.attr_u32(RTA_TABLE, capture_table);
  req.attr_u32(RTA_OIF, lo);
  if (family == AF_INET) {
    const in_addr loopback{htonl(INADDR_LOOPBACK)};
    req.attr(RTA_PREFSRC, as_bytes(loopback));
  } else {
    req.attr(RTA_PREFSRC, as_bytes(in6addr_loopback));
  }
  req.end();
  return netlink::transact(NETLINK_ROUTE, req,
                           family == AF_INET ? "capture routing (IPv4 rule and route)"
                                             : "capture routing (IPv6 rule and route)");
}

}  // namespace

bool route_tcp_to_loopback(bool ipv6) {
  return add_rule_and_route(ipv6 ? AF_INET6 : AF_INET);
}

}  // namespace airlock::launcher
