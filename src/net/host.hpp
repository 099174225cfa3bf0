#pragma once
// Host names and authorities as they arrive on the wire, brought to one canonical form before
// any policy matching, so "127.1", "0x7f000001", "2130706433", "[::ffff:127.0.0.1]" and
// "LOCALHOST." cannot slip past a rule or the address guard.

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::net {

enum class host_kind { dns, ipv4, ipv6 };

struct normalized_host {
  host_kind kind = host_kind::dns;
  // dns: lower case, no trailing dot, each label 1..63 of [a-z0-9-_], total <= 253.
  // ipv4: dotted quad. ipv6: RFC 5952 text without brackets. An IPv4-mapped IPv6 literal
  // (::ffff:a.b.c.d) is reported as the ipv4 it maps to.
  std::string text;
  boost::asio::ip::address address;  // set for ipv4 / ipv6
  bool is_ip() const noexcept { return kind != host_kind::dns; }
};

// Accepts a bare host ("Example.COM.", "10.0.0.1", "0x7f.1", "[::1]", "::1"). IPv4 follows
// the WHATWG URL host parser: 1-4 parts, each decimal, 0x-hex or 0-octal, the last part
// filling the remaining bytes. A name whose last label is numeric but is not a valid IPv4
// address is rejected (as browsers do), as is anything with characters outside a host name.
std::optional<normalized_host> normalize_host(std::string_view host);

// Dotted-decimal text of an IPv4 address (what inet_ntop gives), written by hand: the proxy
// formats an address for every request, and inet_ntop goes through printf.
std::string ipv4_text(boost::asio::ip::address_v4 a);

struct authority {
  normalized_host host;
  std::uint16_t port = 0;
};

// Parses "host[:port]" / "[v6]:port" (a Host header or CONNECT target). No userinfo, path,
// query or fragment is allowed. When the port is absent, default_port is used unless
// port_required (or default_port is 0). Port must be 1..65535 in plain decimal without sign or
// leading zeros ("80", not "080", "+80" or "0x50"), and an empty port ("host:") is refused: every
// spelling that two parsers could read differently is an error. An IPv6 literal must be bracketed
// (RFC 3986 section 3.2.2), with or without a port; "::1" alone is not an authority.
std::optional<authority> parse_authority(std::string_view text, std::uint16_t default_port,
                                         bool port_required);

struct absolute_url {
  authority target;
  // Origin-form target to send upstream: "/" when the URL had no path, "/?q" for
  // "http://h?q" (RFC 9112 section 3.2.1: an empty path is sent as "/"). A copy, not a view,
  // because that case has to be synthesised.
  std::string path_and_query;
};

// Whether `target` holds only bytes a request target may (RFC 9112 section 3.2, RFC 3986
// section 2): no control, space, DEL or non-ASCII byte, no '#' (a fragment, which a client
// must not send) and no '\' (WHATWG parsers read it as '/', so an origin could see another
// path than the one the policy matched).
bool target_bytes_ok(std::string_view target) noexcept;

// Parses an absolute-form request target "http://host[:port]/path?query". Only the http
// scheme (any case) is accepted; userinfo, fragments, an empty host, and bytes that never
// belong in a request target (controls, space, DEL, non-ASCII, backslash) are rejected.
std::optional<absolute_url> parse_http_url(std::string_view text);

}  // namespace airlock::net
