#include "policy/secrets.hpp"

namespace airlock::policy {

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
