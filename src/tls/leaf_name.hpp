#pragma once
// The name a leaf certificate is minted for (and an upstream certificate is checked against):
// a DNS name or an IP literal, brought to one canonical text so that "Example.COM." and
// "example.com" share one cache entry and one certificate.
//
// Thread safety: pure functions.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::tls {

struct leaf_name {
  bool is_ip = false;
  // DNS: lower case, no trailing dot. IP: inet_ntop text (IPv6 as RFC 5952, no brackets).
  std::string text;
};

// Accepts a DNS name (labels of 1..63 characters from [A-Za-z0-9-_], 253 characters in all, one
// trailing dot allowed) or an IP literal (dotted-quad IPv4, IPv6 with or without brackets).
// Rejects wildcards, empty labels, other characters, and names whose last label is all digits
// (not a valid IPv4 address either, e.g. "127.1"; browsers refuse these too).
std::optional<leaf_name> parse_leaf_name(std::string_view host);

}  // namespace airlock::tls
