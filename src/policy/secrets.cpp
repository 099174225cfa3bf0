#include "policy/secrets.hpp"

#include "policy/key_text.hpp"

#include <algorithm>

namespace airlock::policy {

bool swap_places::header_allowed(std::string_view name) const noexcept {
  return any_header || std::any_of(headers.begin(), headers.end(),
                                   [&](const std::string& h) { return core::iequals(h, name); });
}

bool swap_places::param_allowed(std::string_view decoded_name) const noexcept {
  return any_query || std::find(params.begin(), params.end(), decoded_name) != params.end();
}

std::string add_swap_place(std::string_view entry, swap_places& out) {
  constexpr std::string_view places = "header, header:NAME, query, query:NAME, path or anywhere";
  const std::size_t colon = entry.find(':');
  const std::string_view kind = entry.substr(0, colon);
  if (colon == std::string_view::npos) {
    if (kind == "header") {
      out.any_header = true;
    } else if (kind == "query") {
      out.any_query = true;
    } else if (kind == "path") {
      out.path = true;
    } else if (kind == "anywhere") {
      out.anywhere = true;
    } else {
      return core::str_cat("not a place to swap the placeholder in: give ", places);
    }
    return {};
  }
  const std::string_view name = entry.substr(colon + 1);
  if (kind == "header") {
    if (!is_token(name)) return "header:NAME needs a header name (an HTTP token) after the colon";
    if (core::iequals(name, "proxy-authorization"))
      return "Proxy-Authorization is for the proxy and never forwarded: nothing to swap there";
    out.headers.push_back(lower(name));
  } else if (kind == "query") {
    if (name.empty()) return "query:NAME needs a parameter name after the colon";
    out.params.emplace_back(name);
  } else {
    return core::str_cat("not a place to swap the placeholder in: give ", places);
  }
  return {};
}

bool compiled_secret::bound_to(const net::normalized_host& host) const noexcept {
  const std::string_view name = host.text;
  for (const std::string& h : hosts) {
    if (h.starts_with("*.")) {
      // Wildcards name DNS names only, as in rules (an IP literal must be listed exactly).
      const std::string_view dot_suffix = std::string_view(h).substr(1);
      if (!host.is_ip() && name.size() > dot_suffix.size() && name.ends_with(dot_suffix))
        return true;
    } else if (name == h) {
      return true;
    }
  }
  return false;
}

}  // namespace airlock::policy
