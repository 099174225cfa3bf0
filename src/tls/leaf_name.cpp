#include "tls/leaf_name.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace airlock::tls {
namespace {

std::optional<leaf_name> parse_ip(std::string_view host) {
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN];
  host.copy(buf, host.size());
  buf[host.size()] = '\0';
  unsigned char bytes[sizeof(in6_addr)];
  char text[INET6_ADDRSTRLEN];
  if (!bracketed && inet_pton(AF_INET, buf, bytes) == 1) {
    if (inet_ntop(AF_INET, bytes, text, sizeof text) == nullptr) return std::nullopt;
    return leaf_name{true, text};
  }
  // inet_pton takes no zone index ("fe80::1%eth0"), which a certificate cannot carry anyway.
  if (inet_pton(AF_INET6, buf, bytes) == 1) {
    if (inet_ntop(AF_INET6, bytes, text, sizeof text) == nullptr) return std::nullopt;
    return leaf_name{true, text};
  }
  return std::nullopt;
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

std::optional<leaf_name> parse_leaf_name(std::string_view host) {
  if (host.find(':') != std::string_view::npos || host.starts_with('[')) return parse_ip(host);
  if (auto ip = parse_ip(host)) return ip;
  if (host.ends_with('.')) host.remove_suffix(1);
  if (host.empty() || host.size() > 253) return std::nullopt;
  std::string out;
  out.reserve(host.size());
  std::size_t label_len = 0;
  bool label_all_digits = true;
  for (char c : host) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == '.') {
      if (label_len == 0) return std::nullopt;
      label_len = 0;
      label_all_digits = true;
    } else {
      if (!is_label_char(c) || ++label_len > 63) return std::nullopt;
      label_all_digits = label_all_digits && c >= '0' && c <= '9';
    }
    out.push_back(c);
  }
  if (label_len == 0 || label_all_digits) return std::nullopt;
  return leaf_name{false, std::move(out)};
}

}  // namespace airlock::tls
