#pragma once
// The SSRF defence: decides whether an upstream address may be connected to. Special-purpose
// addresses (IANA IPv4/IPv6 special-purpose registries: loopback, RFC 1918, ULA, link-local,
// CGNAT, multicast, broadcast, unspecified, benchmarking, documentation, reserved, cloud
// metadata) are refused, including IPv4 addresses embedded in IPv6 (IPv4-mapped,
// IPv4-compatible, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo
// 2001::/32), unless an allow CIDR names the address. The proxy's own listening endpoints are
// refused always (loop prevention), whatever the exceptions say.
//
// Thread safety: immutable after construction; check() may be called from any thread.

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::net {

struct cidr {
  boost::asio::ip::address network;  // masked to prefix
  unsigned prefix = 0;
  // Parses "10.0.0.0/8", "fd00::/8", or a bare address (full-length prefix).
  static std::optional<cidr> parse(std::string_view text);
  // True when `a` is inside; an IPv4-mapped IPv6 address matches its IPv4 form.
  bool contains(const boost::asio::ip::address& a) const noexcept;
  std::string to_string() const;
};

// Why an address is special, or nullopt when it is globally routable. The string is a short,
// stable category name used as audit and metric detail, one of: "unspecified", "loopback",
// "private", "cgnat", "link_local", "metadata", "multicast", "broadcast", "documentation",
// "benchmarking", "reserved". For an IPv4 address embedded in IPv6 (mapped, compatible,
// NAT64, 6to4, Teredo) it is the embedded address's category; a NAT64 (64:ff9b::/96) or 6to4
// address around a public IPv4 address is not special. The view is to a string literal.
std::optional<std::string_view> special_purpose(const boost::asio::ip::address& a) noexcept;

struct guard_verdict {
  bool allowed = false;
  std::string_view category;  // set when refused: special_purpose() name or "proxy_itself"
};

class address_guard {
 public:
  // block_special=false turns the special-purpose check off (not recommended; the
  // proxy_itself check stays). own_endpoints are the proxy's listening endpoints; an
  // unspecified address (0.0.0.0 / ::) there means every local address on that port, in
  // either family (a dual-stack :: socket takes IPv4 too; refusing too much is harmless), and
  // a target of 0.0.0.0 / :: counts as loopback (connect() to it reaches the local host).
  // Reads the host's interface addresses once (getifaddrs) for the unspecified case; call at
  // startup or reload, not per request.
  address_guard(bool block_special, std::vector<cidr> allow,
                std::vector<boost::asio::ip::tcp::endpoint> own_endpoints);
  // As above with the local interface addresses given (tests, or a caller that has them).
  address_guard(bool block_special, std::vector<cidr> allow,
                std::vector<boost::asio::ip::tcp::endpoint> own_endpoints,
                std::vector<boost::asio::ip::address> local_addresses);

  // Order: the proxy's own endpoints (always refused, "proxy_itself"), then the allow CIDRs
  // (policy-wide and extra_allow, the matched rule's own exceptions: a match allows even a
  // special address), then special_purpose() when block_special. An IPv4-mapped IPv6 address
  // is treated as the IPv4 address it maps to throughout.
  guard_verdict check(const boost::asio::ip::address& a, std::uint16_t port,
                      std::span<const cidr> extra_allow = {}) const noexcept;

 private:
  bool block_special_;
  std::vector<cidr> allow_;
  std::vector<boost::asio::ip::tcp::endpoint> own_;
  std::vector<boost::asio::ip::address> local_;  // interface addresses, IPv4-mapped unmapped
};

// The addresses of the host's interfaces (getifaddrs); empty when that fails.
std::vector<boost::asio::ip::address> local_interface_addresses();

}  // namespace airlock::net
