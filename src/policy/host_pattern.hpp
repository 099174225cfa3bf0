#pragma once
// Private to the policy component: one entry of a `hosts` list (a rule's, a secret's), checked
// and normalised the same way wherever it appears.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::policy {

struct host_pattern {
  // Normalised as written back: "api.github.com", "127.0.0.1", "*.example.com".
  std::string text;
  bool wildcard = false;
  // For a wildcard, what a name must end with: ".example.com" (never the suffix itself).
  std::string dot_suffix;
};

// An exact DNS name or IP literal (normalised: case, trailing dot, IP spellings), or "*.suffix"
// (DNS names only). Null with `error` set (naming the entry as written) when invalid.
std::optional<host_pattern> parse_host_pattern(std::string_view entry, std::string& error);

}  // namespace airlock::policy
