#include "filters/credentials/injection.hpp"

#include "core/str_cat.hpp"
#include "filters/credentials/query_params.hpp"
#include "policy/token.hpp"

#include <boost/beast/http/field.hpp>

namespace airlock::filters::credentials {
namespace http = boost::beast::http;

std::optional<std::string> basic_authorization(const policy::compiled_injection& inject,
                                               std::span<const policy::compiled_secret> secrets) {
  if (!inject.has_basic) return std::nullopt;
  // RFC 7617 section 2: base64(user-id ":" password).
  return core::str_cat(
      "Basic ", policy::base64_encode(core::str_cat(inject.basic_username.expand(secrets), ":",
                                                    inject.basic_password.expand(secrets))));
}

injection_outcome apply_injection(const policy::compiled_injection& inject,
                                  std::span<const policy::compiled_secret> secrets,
                                  const net::normalized_host& host, http::fields& head,
                                  std::string& target) {
  injection_outcome out;
  for (std::size_t i : inject.secrets) {
    const auto& s = secrets[i];
    if (!s.hosts.empty() && !s.bound_to(host)) {
      out.error = core::errc::secret_not_bound;
      out.detail = core::str_cat("secret ", s.name, " may not be sent to ", host.text,
                                 " (see secrets.", s.name, ".hosts)");
      return out;
    }
  }
  for (const auto& [name, value] : inject.headers) {
    head.erase(name);
    head.set(name, value.expand(secrets));
  }
  if (auto basic = basic_authorization(inject, secrets)) {
    head.erase(http::field::authorization);
    head.set(http::field::authorization, *basic);
  }
  for (const auto& [name, value] : inject.query) {
    remove_query_param(target, name);
    append_query_param(target, name, value.expand(secrets));
  }
  return out;
}

}  // namespace airlock::filters::credentials
