#include "net/address_guard.hpp"

#include "core/str_cat.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace airlock::net {
namespace {

namespace ip = boost::asio::ip;
using v6_bytes = ip::address_v6::bytes_type;

// ---------------------------------------------------------------------------------------------
// Bit helpers

constexpr bool in_v4(std::uint32_t a, std::uint32_t network, unsigned prefix) noexcept {
  return prefix == 0 || (a >> (32 - prefix)) == (network >> (32 - prefix));
}

bool in_v6(const v6_bytes& a, const v6_bytes& network, unsigned prefix) noexcept {
  const unsigned whole = prefix / 8;
  if (std::memcmp(a.data(), network.data(), whole) != 0) return false;
  const unsigned bits = prefix % 8;
  if (bits == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - bits));
  return (a[whole] & mask) == (network[whole] & mask);
}

void mask_v6(v6_bytes& b, unsigned prefix) noexcept {
  for (unsigned i = 0; i < 16; ++i) {
    if (prefix >= 8 * (i + 1)) continue;
    const unsigned keep = prefix > 8 * i ? prefix - 8 * i : 0;
    b[i] &= static_cast<std::uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) noexcept {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

std::uint32_t load_be32(const std::uint8_t* p) noexcept {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

// Builds a v6_bytes from up to eight 16-bit groups (the rest zero): v6({0x2001, 0xdb8}).
constexpr v6_bytes v6(std::initializer_list<std::uint16_t> groups) noexcept {
  v6_bytes b{};
  std::size_t i = 0;
  for (auto g : groups) {
    b[i++] = static_cast<std::uint8_t>(g >> 8);
    b[i++] = static_cast<std::uint8_t>(g & 0xff);
  }
  return b;
}

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d, RFC 4291 section 2.5.5.2) is the IPv4 address
// on the wire: a dual-stack socket connects to a.b.c.d. Treat it as that everywhere.
ip::address unmap(const ip::address& a) noexcept {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  }
  return a;
}

// Equality on the address bytes only: an IPv6 scope id does not make a different host.
bool same_host(const ip::address& a, const ip::address& b) noexcept {
  if (a.is_v4() != b.is_v4()) return false;
  if (a.is_v4()) return a.to_v4() == b.to_v4();
  return a.to_v6().to_bytes() == b.to_v6().to_bytes();
}

// Strict address text: inet_pton, no zone id, no surrounding brackets.
std::optional<ip::address> parse_address(std::string_view text) noexcept {
  char buf[INET6_ADDRSTRLEN];
  if (text.empty() || text.size() >= sizeof buf) return std::nullopt;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  if (text.find(':') == std::string_view::npos) {
    ip::address_v4::bytes_type b;
    if (inet_pton(AF_INET, buf, b.data()) != 1) return std::nullopt;
    return ip::address_v4(b);
  }
  v6_bytes b;
  if (inet_pton(AF_INET6, buf, b.data()) != 1) return std::nullopt;
  return ip::address_v6(b);
}

// ---------------------------------------------------------------------------------------------
// IANA IPv4 Special-Purpose Address Registry (RFC 6890, updated by RFC 8190), plus the
// multicast (RFC 5771) and "Reserved for Future Use" (RFC 1112) blocks that the registry does
// not repeat, plus the cloud metadata endpoints that SSRF attacks aim for. Entries listed as
// globally reachable there (192.31.196.0/24 AS112, 192.52.193.0/24 AMT, 192.175.48.0/24) are
// ordinary destinations. More specific entries come first.

struct v4_range {
  std::uint32_t network;
  unsigned prefix;
  std::string_view category;
};

constexpr v4_range v4_special[] = {
    // Instance metadata services: AWS/GCP/Azure/OpenStack IMDS, AWS ECS task metadata,
    // Alibaba Cloud, Oracle Cloud. The first three are inside link-local, CGNAT and
    // 192.0.0.0/24 anyway; the name makes the audit line say what was attempted.
    {v4(169, 254, 169, 254), 32, "metadata"},
    {v4(169, 254, 170, 2), 32, "metadata"},
    {v4(100, 100, 100, 200), 32, "metadata"},
    {v4(192, 0, 0, 192), 32, "metadata"},
    // Azure WireServer: a public-looking address that only answers inside Azure, where it
    // hands out VM configuration; it has been the target of SSRF there.
    {v4(168, 63, 129, 16), 32, "metadata"},
    {v4(0, 0, 0, 0), 8, "unspecified"},          // RFC 791 "this network"; connect() reaches us
    {v4(10, 0, 0, 0), 8, "private"},             // RFC 1918
    {v4(100, 64, 0, 0), 10, "cgnat"},            // RFC 6598 shared address space
    {v4(127, 0, 0, 0), 8, "loopback"},           // RFC 1122
    {v4(169, 254, 0, 0), 16, "link_local"},      // RFC 3927
    {v4(172, 16, 0, 0), 12, "private"},          // RFC 1918
    {v4(192, 0, 0, 0), 24, "reserved"},          // RFC 6890 IETF protocol assignments
    {v4(192, 0, 2, 0), 24, "documentation"},     // RFC 5737 TEST-NET-1
    {v4(192, 88, 99, 0), 24, "reserved"},        // RFC 7526 deprecated 6to4 relay anycast
    {v4(192, 168, 0, 0), 16, "private"},         // RFC 1918
    {v4(198, 18, 0, 0), 15, "benchmarking"},     // RFC 2544
    {v4(198, 51, 100, 0), 24, "documentation"},  // RFC 5737 TEST-NET-2
    {v4(203, 0, 113, 0), 24, "documentation"},   // RFC 5737 TEST-NET-3
    {v4(224, 0, 0, 0), 4, "multicast"},          // RFC 5771
    {v4(255, 255, 255, 255), 32, "broadcast"},   // RFC 919 limited broadcast
    {v4(240, 0, 0, 0), 4, "reserved"},           // RFC 1112 section 4
};

std::optional<std::string_view> classify_v4(std::uint32_t a) noexcept {
  for (const auto& r : v4_special) {
    if (in_v4(a, r.network, r.prefix)) return r.category;
  }
  return std::nullopt;
}

// IANA IPv6 Special-Purpose Address Registry and IPv6 Address Space registry. Where an IPv4
// address is embedded, its own category wins: ::ffff:127.0.0.1 is "loopback".
std::optional<std::string_view> classify_v6(const v6_bytes& b) noexcept {
  static constexpr v6_bytes zero{};
  static constexpr v6_bytes loopback = v6({0, 0, 0, 0, 0, 0, 0, 1});
  static constexpr v6_bytes mapped = v6({0, 0, 0, 0, 0, 0xffff});
  static constexpr v6_bytes nat64 = v6({0x64, 0xff9b});
  static constexpr v6_bytes nat64_local = v6({0x64, 0xff9b, 1});
  static constexpr v6_bytes discard = v6({0x100});
  static constexpr v6_bytes ietf = v6({0x2001});
  static constexpr v6_bytes benchmarking = v6({0x2001, 2});
  static constexpr v6_bytes documentation = v6({0x2001, 0xdb8});
  static constexpr v6_bytes documentation2 = v6({0x3fff});
  static constexpr v6_bytes six_to_four = v6({0x2002});
  static constexpr v6_bytes aws_metadata = v6({0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254});
  static constexpr v6_bytes ula = v6({0xfc00});
  static constexpr v6_bytes link_local = v6({0xfe80});
  static constexpr v6_bytes site_local = v6({0xfec0});
  static constexpr v6_bytes multicast = v6({0xff00});
  static constexpr v6_bytes global_unicast = v6({0x2000});

  const std::uint32_t last32 = load_be32(b.data() + 12);
  if (b == zero) return "unspecified";
  if (b == loopback) return "loopback";
  // ::ffff:0:0/96 IPv4-mapped (RFC 4291): the IPv4 address itself.
  if (in_v6(b, mapped, 96)) return classify_v4(last32);
  // ::/96 IPv4-compatible (RFC 4291 section 2.5.5.1, deprecated): never routed as such.
  if (in_v6(b, zero, 96)) {
    auto c = classify_v4(last32);
    return c ? c : "reserved";
  }
  // 64:ff9b::/96 NAT64 well-known prefix (RFC 6052): the translator connects to the embedded
  // address, so it decides; a public one is an ordinary destination.
  if (in_v6(b, nat64, 96)) return classify_v4(last32);
  // 64:ff9b:1::/48 local-use NAT64 (RFC 8215): reaches networks of the operator's choosing.
  if (in_v6(b, nat64_local, 48)) return "private";
  if (in_v6(b, discard, 64)) return "reserved";  // RFC 6666 discard-only
  // 2001::/32 Teredo (RFC 4380): the client's IPv4 address is the last 32 bits inverted.
  // Tunnelled through a relay to whatever that is, so Teredo is refused in any case.
  if (in_v6(b, ietf, 32)) {
    auto c = classify_v4(~last32);
    return c ? c : "reserved";
  }
  if (in_v6(b, benchmarking, 48)) return "benchmarking";  // RFC 5180
  // 2001::/23 IETF protocol assignments (RFC 2928). A few entries inside it are globally
  // reachable anycast services; none is a plausible upstream for an agent.
  if (in_v6(b, ietf, 23)) return "reserved";
  if (in_v6(b, documentation, 32)) return "documentation";  // RFC 3849
  // 2002::/16 6to4 (RFC 3056): the IPv4 address of the tunnel end is in bits 16..47.
  if (in_v6(b, six_to_four, 16)) return classify_v4(load_be32(b.data() + 2));
  if (in_v6(b, documentation2, 20)) return "documentation";  // RFC 9637
  if (b == aws_metadata) return "metadata";                  // AWS IMDS over IPv6
  if (in_v6(b, ula, 7)) return "private";                    // RFC 4193 unique local
  if (in_v6(b, link_local, 10)) return "link_local";         // RFC 4291
  if (in_v6(b, site_local, 10)) return "private";            // RFC 3879 deprecated site-local
  if (in_v6(b, multicast, 8)) return "multicast";            // RFC 4291
  // Outside 2000::/3 all unicast space is "Reserved by IETF" in the IPv6 Address Space
  // registry (what is left of ::/8, 100::/8 ... 1e00::/7, 4000::/2 ... f800::/6, 5f00::/16
  // SRv6 SIDs): not routed on the Internet, so nothing legitimate lives there.
  if (!in_v6(b, global_unicast, 3)) return "reserved";
  return std::nullopt;
}

// True when connecting to `target` would reach a listener bound to `own` on the same port.
bool reaches(const ip::address& target, const ip::address& own,
             const std::vector<ip::address>& local) noexcept {
  if (same_host(target, own)) return true;
  // connect() to 0.0.0.0 or :: goes to the local host (Linux turns it into loopback).
  const bool target_local = target.is_unspecified() || target.is_loopback() ||
                            std::any_of(local.begin(), local.end(),
                                        [&](const ip::address& l) { return same_host(target, l); });
  if (own.is_unspecified()) {
    // A wildcard listener takes every local address. Either family counts: an IPv6 wildcard
    // socket is dual-stack unless IPV6_V6ONLY, and refusing too much here is harmless.
    return target_local;
  }
  return target.is_unspecified() && own.is_loopback();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// cidr

std::optional<cidr> cidr::parse(std::string_view text) {
  const auto slash = text.find('/');
  const auto address = parse_address(text.substr(0, slash));
  if (!address) return std::nullopt;
  const unsigned max_prefix = address->is_v4() ? 32 : 128;
  unsigned prefix = max_prefix;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) {
      return std::nullopt;
    }
    prefix = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      prefix = prefix * 10 + unsigned(c - '0');
    }
    if (prefix > max_prefix) return std::nullopt;
  }
  cidr out;
  out.prefix = prefix;
  if (address->is_v4()) {
    const std::uint32_t a = address->to_v4().to_uint();
    const std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
    out.network = ip::address_v4(a & mask);
  } else {
    auto b = address->to_v6().to_bytes();
    mask_v6(b, prefix);
    out.network = ip::address_v6(b);
  }
  return out;
}

bool cidr::contains(const ip::address& a) const noexcept {
  if (network.is_v4()) {
    const ip::address u = unmap(a);
    if (!u.is_v4()) return false;
    return in_v4(u.to_v4().to_uint(), network.to_v4().to_uint(), prefix);
  }
  // An IPv6 network holds IPv4 addresses in their mapped form (::ffff:a.b.c.d), so
  // "::ffff:10.0.0.0/104" and "10.0.0.0/8" mean the same thing.
  const v6_bytes b =
      a.is_v4() ? ip::make_address_v6(ip::v4_mapped, a.to_v4()).to_bytes() : a.to_v6().to_bytes();
  return in_v6(b, network.to_v6().to_bytes(), prefix);
}

std::string cidr::to_string() const {
  return core::str_cat(network.to_string(), '/', prefix);
}

// ---------------------------------------------------------------------------------------------

std::optional<std::string_view> special_purpose(const ip::address& a) noexcept {
  if (a.is_v4()) return classify_v4(a.to_v4().to_uint());
  return classify_v6(a.to_v6().to_bytes());
}

std::vector<ip::address> local_interface_addresses() {
  std::vector<ip::address> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      out.emplace_back(ip::address_v4(ntohl(sin->sin_addr.s_addr)));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      v6_bytes b;
      std::memcpy(b.data(), &sin6->sin6_addr, b.size());
      out.emplace_back(unmap(ip::address_v6(b)));
    }
  }
  freeifaddrs(list);
  return out;
}

address_guard::address_guard(bool block_special, std::vector<cidr> allow,
                             std::vector<ip::tcp::endpoint> own_endpoints)
    : address_guard(block_special, std::move(allow), std::move(own_endpoints),
                    local_interface_addresses()) {}

address_guard::address_guard(bool block_special, std::vector<cidr> allow,
                             std::vector<ip::tcp::endpoint> own_endpoints,
                             std::vector<ip::address> local_addresses)
    : block_special_(block_special),
      allow_(std::move(allow)),
      own_(std::move(own_endpoints)),
      local_(std::move(local_addresses)) {
  for (auto& l : local_)
    l = unmap(l);
}

guard_verdict address_guard::check(const ip::address& address, std::uint16_t port,
                                   std::span<const cidr> extra_allow) const noexcept {
  const ip::address a = unmap(address);
  for (const auto& own : own_) {
    if (own.port() == port && reaches(a, unmap(own.address()), local_)) {
      return {false, "proxy_itself"};
    }
  }
  for (const auto& c : allow_) {
    if (c.contains(a)) return {true, {}};
  }
  for (const auto& c : extra_allow) {
    if (c.contains(a)) return {true, {}};
  }
  if (block_special_) {
    if (auto category = special_purpose(a)) return {false, *category};
  }
  return {true, {}};
}

}  // namespace airlock::net
