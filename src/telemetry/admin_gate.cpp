#include "telemetry/admin_gate.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>

namespace airlock::telemetry {
namespace {

// RFC 3986 section 3.2.3: port = *DIGIT (an empty port is the scheme's default).
bool port_ok(std::string_view port) {
  return port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The host part of "host[:port]", or nullopt when the text is not that shape.
std::optional<std::string_view> host_part(std::string_view host) {
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !port_ok(rest.substr(1)))) return std::nullopt;
    return host.substr(0, close + 1);
  }
  const auto colon = host.find(':');
  if (colon != std::string_view::npos && !port_ok(host.substr(colon + 1))) return std::nullopt;
  return host.substr(0, colon);
}

bool ip_literal(std::string_view name) {
  boost::system::error_code ec;
  if (name.starts_with('[') && name.ends_with(']')) {
    const std::string inner(name.substr(1, name.size() - 2));
    // A zone ("%25eth0", RFC 6874) names no address a browser would use for a page here.
    if (inner.find('%') != std::string::npos) return false;
    boost::asio::ip::make_address_v6(inner, ec);
    return !ec;
  }
  // inet_pton(3): four decimal parts only, so "0x7f.1" or "2130706433" (which a resolver or a
  // URL parser may read as an address) are names here, and refused unless listed.
  boost::asio::ip::make_address_v4(std::string(name), ec);
  return !ec;
}

}  // namespace

bool admin_host_allowed(std::string_view host, const std::vector<std::string>& names) {
  const auto name = host_part(host);
  if (!name || name->empty()) return false;
  if (ip_literal(*name)) return true;
  // RFC 6761 section 6.3: localhost resolves to loopback without asking DNS, so no page can
  // re-point it. Browsers send it lowercase; clients may not (RFC 9110 section 4.2.3).
  if (core::iequals(*name, "localhost")) return true;
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return core::iequals(*name, n); });
}

std::optional<std::string> misdirected(const admin_request_view& req,
                                       const std::vector<std::string>& names) {
  if (req.host_count > 1) return std::string("more than one Host field");
  if (!req.host) {
    // RFC 9112 section 3.2: HTTP/1.1 requires it; an HTTP/1.0 client (an old probe) may omit
    // it, and no browser does.
    if (req.http10) return std::nullopt;
    return std::string("no Host field");
  }
  if (admin_host_allowed(*req.host, names)) return std::nullopt;
  return core::str_cat("Host ", loggable(*req.host),
                       " is not an address of this admin listener, localhost or a name in "
                       "listen.admin_hosts");
}

std::optional<std::string> cross_site(const admin_request_view& req) {
  const bool navigation = req.fetch_mode == "navigate" && req.fetch_dest == "document";
  if (req.fetch_site && *req.fetch_site != "same-origin" && *req.fetch_site != "none") {
    // A link to the console from another site: the page itself reads and acts same-origin.
    if (!(req.safe && navigation && req.path == "/console"))
      return core::str_cat(
          "cross-site request refused (Sec-Fetch-Site: ", loggable(*req.fetch_site), ")");
  }
  if (req.fetch_dest && *req.fetch_dest != "empty" && !(req.safe && *req.fetch_dest == "document"))
    // An <img>, <script>, <iframe>... pointed here: nothing on this port is a page element, and
    // each would hold a connection (an /events slot).
    return core::str_cat(
        "request from a page element refused (Sec-Fetch-Dest: ", loggable(*req.fetch_dest), ")");
  if (req.origin) {
    // RFC 6454 section 6.1: scheme "://" host [":" port]; the admin port speaks plain http and
    // the Host was checked already, so an Origin equal to it is this listener's.
    const std::string_view o = *req.origin;
    if (!req.host || !o.starts_with("http://") || !core::iequals(o.substr(7), *req.host))
      return core::str_cat("cross-site request refused (Origin: ", loggable(o), ")");
  }
  return std::nullopt;
}

std::string loggable(std::string_view value) {
  constexpr std::size_t limit = 100;
  std::string out;
  out.reserve(std::min(value.size(), limit) + 3);
  for (char c : value.substr(0, limit))
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (value.size() > limit) out += "...";
  return out;
}

}  // namespace airlock::telemetry
