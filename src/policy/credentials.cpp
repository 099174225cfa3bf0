#include "policy/credentials.hpp"

#include <algorithm>

namespace airlock::policy {

std::string secret_template::expand(std::span<const compiled_secret> secrets) const {
  std::size_t size = 0;
  for (const part& p : parts)
    size += p.text.size() + (p.secret < secrets.size() ? secrets[p.secret].value.size() : 0);
  std::string out;
  out.reserve(size);
  for (const part& p : parts) {
    out += p.text;
    // An index the snapshot does not have cannot come from the compiler; nothing is added
    // rather than reading out of bounds.
    if (p.secret < secrets.size()) out += secrets[p.secret].value.reveal();
  }
  return out;
}

bool secret_template::uses_secrets() const noexcept {
  return std::any_of(parts.begin(), parts.end(),
                     [](const part& p) { return p.secret != no_secret; });
}

}  // namespace airlock::policy
