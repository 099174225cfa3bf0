#include "proxy/hop_by_hop.hpp"

#include "core/ascii.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace airlock::proxy {
using core::lower;
namespace http = boost::beast::http;

namespace {}  // namespace

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
        named.push_back(std::move(name));
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
  for (auto f : {http::field::connection, http::field::keep_alive, http::field::proxy_connection,
                 http::field::proxy_authorization, http::field::proxy_authenticate, http::field::te,
                 http::field::trailer, http::field::upgrade}) {
    fields.erase(f);
  }
  return upgrade;
}

}  // namespace airlock::proxy
