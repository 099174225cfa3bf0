#include "policy/endpoint.hpp"

#include "net/host.hpp"

#include <charconv>

namespace airlock::policy {

std::optional<boost::asio::ip::tcp::endpoint> parse_endpoint(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return std::nullopt;
    host = text.substr(0, close + 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    // A bare IPv6 address would make the port ambiguous: brackets are required.
    if (host.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (port.empty() || port.size() > 5) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value > 65535) return std::nullopt;
  const auto normalized = net::normalize_host(host);
  if (!normalized || !normalized->is_ip()) return std::nullopt;
  return boost::asio::ip::tcp::endpoint(normalized->address, static_cast<std::uint16_t>(value));
}

}  // namespace airlock::policy
