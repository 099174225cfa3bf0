#pragma once
// Where a placeholder may become its secret's value on a host the secret is bound to
// (policy::swap_places, `secrets.NAME.swap_in`). Swapping it wherever it occurs would let the
// agent have the proxy write the value into a field the host keeps, forwards or shows: the URL
// of a webhook the host will call (POST /hooks?url=http://elsewhere/?k=<placeholder>), a chat
// message, a file name. So it is swapped only where a credential goes, and a placeholder found
// anywhere else on those hosts is refused (placeholder_misplaced) rather than forwarded.
//
// @par Thread Safety
// Free functions over caller-owned data.

#include "policy/secrets.hpp"

#include <boost/beast/http/fields.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace airlock::filters::credentials {

// Whether a header value is a credential the placeholder stands in: the placeholder alone, or
// one auth-scheme token, one or more spaces and the placeholder (RFC 9110 section 11.4,
// credentials = auth-scheme [ 1*SP token68 ]: "Bearer <placeholder>", "token <placeholder>").
bool credential_value(std::string_view value, std::string_view placeholder) noexcept;

// Whether a query parameter's value (as sent) is the placeholder, as it is or decoded.
bool credential_param(std::string_view raw_value, std::string_view placeholder);

// Calls f(raw_name, raw_value, has_value) for each '&'-separated parameter of `query` (the
// part after '?'), empty ones included, in order.
template <typename F>
void for_each_param(std::string_view query, F&& f) {
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view param = query.substr(start, end - start);
    const std::size_t eq = param.find('=');
    f(param.substr(0, eq), eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1),
      eq != std::string_view::npos);
    start = end + 1;
  }
}

// A parameter's name decoded (form_decode), or as written when it cannot be decoded.
std::string_view param_name(std::string_view raw_name, std::string& buf);

// Whether the parameter (raw name and value) is one where `s`'s placeholder is swapped.
bool param_slot(const policy::compiled_secret& s, std::string_view raw_name,
                std::string_view raw_value, bool has_value);

struct misplacement {
  std::size_t secret = 0;  // index into the secrets
  std::string where;       // "the path", "header x-note", "query parameter url": never a value
};

// The first secret of `which` whose placeholder occurs where its swap_in does not swap it: the
// method, the authority, a header name, a header value that is not a credential form of an
// allowed header, the path (without `path`), the query outside an allowed parameter's whole
// value. Nothing for a secret whose swap_in has `anywhere`. Proxy-Authorization's value is not
// looked at (it is for the proxy and never forwarded).
std::optional<misplacement> find_misplaced(std::span<const policy::compiled_secret> secrets,
                                           std::span<const std::size_t> which,
                                           const boost::beast::http::fields& head,
                                           std::string_view authority,
                                           std::string_view path_and_query,
                                           std::string_view method);

}  // namespace airlock::filters::credentials
