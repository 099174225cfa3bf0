#include "net/host.hpp"

#include <arpa/inet.h>

#include <array>
#include <cstring>

namespace airlock::net {
namespace {

namespace ip = boost::asio::ip;

// RFC 1035 section 2.3.4 (via RFC 1123 section 2.1): 63 octets per label, 255 octets on the
// wire, which is 253 characters of dotted text without the trailing dot.
constexpr std::size_t max_label = 63;
constexpr std::size_t max_name = 253;
// "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255" is the longest IPv6 text (INET6_ADDRSTRLEN
// counts the terminating NUL).
constexpr std::size_t max_ipv6_text = INET6_ADDRSTRLEN - 1;

constexpr char to_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? char(c + 32) : c;
}
constexpr bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// After lower-casing: the characters of a DNS name as we accept it. Underscore is not valid
// in a host name (RFC 952) but appears in real service names (_dmarc, SRV-style records).
constexpr bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_' || c == '.';
}

// WHATWG URL "IPv4 number parser": "0x"/"0X" means hex (and "0x" alone is 0), a leading 0
// means octal, else decimal. The value saturates just above 2^32, which every caller rejects,
// so any number of digits is safe.
std::optional<std::uint64_t> parse_ipv4_number(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  unsigned radix = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    radix = 16;
    s.remove_prefix(2);
  } else if (s.size() >= 2 && s[0] == '0') {
    radix = 8;
    s.remove_prefix(1);
  }
  constexpr std::uint64_t saturated = std::uint64_t{1} << 32;
  std::uint64_t value = 0;
  for (char c : s) {
    unsigned digit;
    if (is_digit(c)) {
      digit = unsigned(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = unsigned(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = unsigned(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    if (digit >= radix) return std::nullopt;
    value = value * radix + digit;
    if (value > saturated) value = saturated;
  }
  return value;
}

// WHATWG "ends in a number checker", for a name already known to have no empty label: the
// last label is all digits, or parses as an IPv4 number ("0x", "0x1f").
bool ends_in_number(std::string_view name) noexcept {
  const auto dot = name.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  bool all_digits = !last.empty();
  for (char c : last)
    all_digits = all_digits && is_digit(c);
  return all_digits || parse_ipv4_number(last).has_value();
}

// WHATWG "IPv4 parser" for a name without empty labels: 1 to 4 parts; every part but the last
// is one byte, the last fills the remaining bytes ("127.1" is 127.0.0.1).
std::optional<std::uint32_t> parse_ipv4(std::string_view name) noexcept {
  std::array<std::uint64_t, 4> parts{};
  std::size_t count = 0;
  while (true) {
    if (count == parts.size()) return std::nullopt;
    const auto dot = name.find('.');
    const auto value = parse_ipv4_number(name.substr(0, dot));
    if (!value) return std::nullopt;
    parts[count++] = *value;
    if (dot == std::string_view::npos) break;
    name.remove_prefix(dot + 1);
  }
  std::uint32_t address = 0;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    if (parts[i] > 255) return std::nullopt;
    address |= std::uint32_t(parts[i]) << (8 * (3 - i));
  }
  const std::uint64_t last = parts[count - 1];
  if (last >= (std::uint64_t{1} << (8 * (5 - count)))) return std::nullopt;
  return address | std::uint32_t(last);
}

normalized_host from_v4(ip::address_v4 a) {
  normalized_host h;
  h.kind = host_kind::ipv4;
  h.text = ipv4_text(a);
  h.address = a;
  return h;
}

// An IPv6 literal without brackets. inet_pton (RFC 4291 section 2.2 text forms, dotted IPv4
// tail only in the last 32 bits, no leading zeros in it) does the parsing; a zone id
// ("fe80::1%eth0", RFC 6874) is refused because it names an interface of this host, which is
// never a valid upstream, and because "%" is percent-encoding's escape in URLs.
std::optional<normalized_host> parse_ipv6(std::string_view text) {
  if (text.empty() || text.size() > max_ipv6_text) return std::nullopt;
  for (char c : text) {
    const char l = to_lower(c);
    if (!(is_digit(l) || (l >= 'a' && l <= 'f') || l == ':' || l == '.')) return std::nullopt;
  }
  char buf[max_ipv6_text + 1];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  ip::address_v6::bytes_type bytes;
  if (inet_pton(AF_INET6, buf, bytes.data()) != 1) return std::nullopt;
  const ip::address_v6 a(bytes);
  if (a.is_v4_mapped()) return from_v4(ip::make_address_v4(ip::v4_mapped, a));
  normalized_host h;
  h.kind = host_kind::ipv6;
  h.text = a.to_string();  // inet_ntop: lower case, longest zero run compressed (RFC 5952)
  h.address = a;
  return h;
}

// Port: 1..65535, decimal digits only, no leading zero.
std::optional<std::uint16_t> parse_port(std::string_view s) noexcept {
  if (s.empty() || s.size() > 5 || s[0] == '0') return std::nullopt;
  std::uint32_t value = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + unsigned(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return std::uint16_t(value);
}

bool iequals_prefix(std::string_view text, std::string_view lower_prefix) noexcept {
  if (text.size() < lower_prefix.size()) return false;
  for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
    if (to_lower(text[i]) != lower_prefix[i]) return false;
  }
  return true;
}

}  // namespace

std::string ipv4_text(ip::address_v4 a) {
  const auto bytes = a.to_bytes();
  std::string out;
  out.reserve(15);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i) out.push_back('.');
    const unsigned v = bytes[i];
    if (v >= 100) out.push_back(static_cast<char>('0' + v / 100));
    if (v >= 10) out.push_back(static_cast<char>('0' + v / 10 % 10));
    out.push_back(static_cast<char>('0' + v % 10));
  }
  return out;
}

std::optional<normalized_host> normalize_host(std::string_view host) {
  if (host.empty()) return std::nullopt;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    return parse_ipv6(host.substr(1, host.size() - 2));
  }
  if (host.find(':') != std::string_view::npos) return parse_ipv6(host);

  // One trailing dot is the absolute form of the same name (RFC 1034 section 3.1).
  if (host.back() == '.') host.remove_suffix(1);
  if (host.empty() || host.size() > max_name) return std::nullopt;

  normalized_host h;
  h.text.resize(host.size());
  std::size_t label = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const char c = to_lower(host[i]);
    if (!is_name_char(c)) return std::nullopt;  // also '%': no percent-encoding in hosts
    if (c == '.') {
      if (label == 0) return std::nullopt;  // empty label: leading dot or ".."
      label = 0;
    } else if (++label > max_label) {
      return std::nullopt;
    }
    h.text[i] = c;
  }
  if (label == 0) return std::nullopt;  // "a.." had two trailing dots

  // Browsers take a name ending in a number as IPv4 and fail it if it is not one, so
  // "1.2.3.256" or "foo.09" must not reach DNS as names (WHATWG URL, host parser step 7).
  if (ends_in_number(h.text)) {
    const auto v4 = parse_ipv4(h.text);
    if (!v4) return std::nullopt;
    return from_v4(ip::address_v4(*v4));
  }
  return h;
}

std::optional<authority> parse_authority(std::string_view text, std::uint16_t default_port,
                                         bool port_required) {
  std::string_view host = text;
  std::string_view port;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(0, close + 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    const auto colon = text.find(':');
    if (colon != std::string_view::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
      // A second colon means an unbracketed IPv6 literal or garbage; parse_port refuses it.
    }
  }
  // Userinfo ("user@host") is never valid here (RFC 9110 section 4.2.4 deprecates it and
  // forbids it in Host); normalize_host refuses '@', '/', '?', '#' and spaces as well.
  authority out;
  if (has_port) {
    const auto p = parse_port(port);
    if (!p) return std::nullopt;
    out.port = *p;
  } else {
    if (port_required || default_port == 0) return std::nullopt;
    out.port = default_port;
  }
  auto h = normalize_host(host);
  if (!h) return std::nullopt;
  out.host = std::move(*h);
  return out;
}

bool target_bytes_ok(std::string_view target) noexcept {
  for (char ch : target) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '#' || c == '\\') return false;
  }
  return true;
}

std::optional<absolute_url> parse_http_url(std::string_view text) {
  constexpr std::string_view scheme = "http://";
  if (!iequals_prefix(text, scheme) || !target_bytes_ok(text)) return std::nullopt;
  const std::string_view rest = text.substr(scheme.size());
  const auto end = rest.find_first_of("/?");
  const std::string_view auth = rest.substr(0, end);
  if (auth.empty() || auth.find('@') != std::string_view::npos) return std::nullopt;
  auto target = parse_authority(auth, 80, false);
  if (!target) return std::nullopt;

  absolute_url url;
  url.target = std::move(*target);
  // Built in one expression: GCC 12 at -O3 reports a false -Wrestrict on
  // assign-then-append into the same std::string (GCC bug 105329).
  const std::string_view path =
      end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  const bool needs_slash = path.empty() || path.front() == '?';
  url.path_and_query = std::string(needs_slash ? "/" : "") + std::string(path);
  return url;
}

}  // namespace airlock::net
