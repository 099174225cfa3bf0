#include "policy/operators.hpp"

#include "core/str_cat.hpp"
#include "policy/token.hpp"

#include <algorithm>

namespace airlock::policy {
namespace {

bool is_operator_name(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

char lower_hex(char c) {
  return (c >= 'A' && c <= 'F') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

}  // namespace

void check_operators(model::policy& p, const mark_table& marks, error_sink& errors) {
  for (std::size_t i = 0; i < p.operators.size(); ++i) {
    auto& o = p.operators[i];
    const std::string key = core::str_cat("operators.", o.name);
    if (!is_operator_name(o.name)) {
      errors.add(marks.find(key), key,
                 core::str_cat("invalid operator name '", o.name.substr(0, 64),
                               "' (use letters, digits, _ . -; at most 64)"));
      continue;
    }
    const std::string hkey = key + ".token_sha256";
    if (errors.reported(hkey)) continue;
    if (!is_hex64(o.token_sha256)) {
      // The value is not echoed: someone may have pasted the token itself here.
      errors.add(marks.find(o.token_sha256.empty() ? key : hkey), hkey,
                 "must be 64 hex digits: the SHA-256 of the token (printf %s TOKEN | sha256sum)");
      continue;
    }
    std::transform(o.token_sha256.begin(), o.token_sha256.end(), o.token_sha256.begin(), lower_hex);
    for (std::size_t j = 0; j < i; ++j) {
      if (p.operators[j].token_sha256 == o.token_sha256) {
        // A token must name exactly one operator: the audit trail says who acted.
        errors.add(marks.find(hkey), hkey,
                   core::str_cat("same token as operator '", p.operators[j].name, "'"));
        break;
      }
    }
  }
}

const model::operator_token* find_operator(const model::policy& p, std::string_view token) {
  if (token.empty()) return nullptr;
  const std::string hash = sha256_hex(token);
  const model::operator_token* found = nullptr;
  for (const auto& o : p.operators) {
    const bool same = !o.token_sha256.empty() && constant_time_equal(hash, o.token_sha256);
    if (same && found == nullptr) found = &o;
  }
  return found;
}

}  // namespace airlock::policy
