#include "telemetry/admin_auth.hpp"

#include "core/ascii.hpp"

namespace airlock::telemetry {

using boost::asio::ip::make_address_v4;
using boost::asio::ip::v4_mapped;

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size()) return std::nullopt;
  if (!core::iequals(authorization.substr(0, scheme.size()), scheme)) return std::nullopt;
  std::string_view token = authorization.substr(scheme.size());
  // token68 (RFC 9110 section 11.2): no spaces inside; trailing whitespace was trimmed by
  // the parser already.
  if (token.empty() || token.find_first_of(" \t,") != std::string_view::npos) return std::nullopt;
  return token;
}

std::optional<std::string> loopback_only(const admin_caller& caller, std::string& reason) {
  auto a = caller.peer.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = make_address_v4(v4_mapped, a.to_v6());
  if (a.is_loopback()) return std::string("local");
  reason = "operator token required: no operators are configured, so only loopback may act";
  return std::nullopt;
}

std::string endpoint_string(const boost::asio::ip::tcp::endpoint& ep) {
  const auto a = ep.address();
  std::string out = a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
  out += ':';
  out += std::to_string(ep.port());
  return out;
}

}  // namespace airlock::telemetry
