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

// Why an address is special, or nullopt when it is globally routable. The string is a short
// category name ("loopback", "private", "link_local", "metadata", "cgnat", ...).
std::optional<std::string_view> special_purpose(const boost::asio::ip::address& a) noexcept;

struct guard_verdict {
  bool allowed = false;
  std::string_view category;  // set when refused: special_purpose() name or "proxy_itself"
};

class address_guard {
 public:
  // block_special=false turns the special-purpose check off (not recommended; the
  // proxy_itself check stays). own_endpoints are the proxy's listening endpoints; an
  // unspecified address (0.0.0.0 / ::) there means every local address on that port.
  address_guard(bool block_special, std::vector<cidr> allow,
                std::vector<boost::asio::ip::tcp::endpoint> own_endpoints);

  // extra_allow: the matched rule's own CIDR exceptions.
  guard_verdict check(const boost::asio::ip::address& a, std::uint16_t port,
                      std::span<const cidr> extra_allow = {}) const noexcept;

 private:
  bool block_special_;
  std::vector<cidr> allow_;
  std::vector<boost::asio::ip::tcp::endpoint> own_;
};

}  // namespace airlock::net
