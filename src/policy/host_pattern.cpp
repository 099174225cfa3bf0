#include "policy/host_pattern.hpp"

#include "core/str_cat.hpp"
#include "net/host.hpp"

namespace airlock::policy {

std::optional<host_pattern> parse_host_pattern(std::string_view entry, std::string& error) {
  std::string_view name = entry;
  const bool wildcard = name.starts_with("*.");
  if (wildcard) name.remove_prefix(2);
  if (name.find('*') != std::string_view::npos) {
    error = core::str_cat("invalid host '", entry,
                          "': '*' is only allowed as a leading '*.' (e.g. *.example.com)");
    return std::nullopt;
  }
  const auto host = net::normalize_host(name);
  if (!host) {
    error = core::str_cat("invalid host '", entry, "'");
    return std::nullopt;
  }
  host_pattern out;
  out.wildcard = wildcard;
  if (wildcard) {
    if (host->is_ip()) {
      error = core::str_cat("invalid host '", entry,
                            "': a '*.' wildcard needs a DNS name, not an address");
      return std::nullopt;
    }
    out.text = core::str_cat("*.", host->text);
    out.dot_suffix = core::str_cat(".", host->text);
  } else {
    out.text = host->text;
  }
  return out;
}

}  // namespace airlock::policy
