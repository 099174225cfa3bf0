#include "proxy/hop_by_hop.hpp"

#include "core/ascii.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace airlock::proxy {
using core::lower;
namespace http = boost::beast::http;

namespace {

// The fields that are always the connection's own (RFC 9110 section 7.6.1), and the proxy's
// (Proxy-Authorization is for us, Proxy-Authenticate from an origin is not for our client).
bool always_hop_by_hop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::proxy_authorization:
    case http::field::proxy_authenticate:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
      return true;
    default:
      return false;
  }
}

// The same fields by name, lower case: a Connection token naming one of them needs no erase of
// its own (the walk below removes them all), so "Connection: keep-alive", on nearly every
// head, costs no list and no lookup by name.
bool always_hop_by_hop(std::string_view lower_name) {
  static constexpr std::string_view names[] = {
      "connection",         "keep-alive", "proxy-connection", "proxy-authorization",
      "proxy-authenticate", "te",         "trailer",          "upgrade"};
  return std::find(std::begin(names), std::end(names), lower_name) != std::end(names);
}

}  // namespace

std::string strip_hop_by_hop(http::fields& fields) {
  // Collect the names listed in every Connection header first (it may repeat).
  std::vector<std::string> named;
  bool wants_upgrade = false;
  for (auto it = fields.find(http::field::connection);
       it != fields.end() && it->name() == http::field::connection; ++it) {
    std::string_view value = it->value();
    while (!value.empty()) {
      auto comma = value.find(',');
      auto token = core::trim_ows(value.substr(0, comma));
      if (!token.empty()) {
        auto name = lower(token);
        if (name == "upgrade") wants_upgrade = true;
        if (!always_hop_by_hop(name)) named.push_back(std::move(name));
      }
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }
  std::string upgrade;
  if (wants_upgrade) {
    auto it = fields.find(http::field::upgrade);
    if (it != fields.end()) upgrade = lower(core::trim_ows(it->value()));
  }
  for (const auto& name : named) {
    // Never let Connection remove the framing headers: that is a known smuggling trick.
    if (name == "content-length" || name == "transfer-encoding" || name == "host") continue;
    fields.erase(name);
  }
  // One walk over the fields, erasing by position: erasing each of the eight names by name
  // was eight lookups in the fields' name index per head (a hot spot of every request).
  for (auto it = fields.begin(); it != fields.end();)
    it = always_hop_by_hop(it->name()) ? fields.erase(it) : std::next(it);
  return upgrade;
}

}  // namespace airlock::proxy
