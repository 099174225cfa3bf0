#include "policy/secret_references.hpp"

#include "core/str_cat.hpp"
#include "policy/secrets_compiler.hpp"

#include <algorithm>

namespace airlock::policy {

bool secret_name_shape(std::string_view s) {
  return !s.empty() && s.size() <= max_secret_name && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::size_t find_secret(std::span<const compiled_secret> secrets, std::string_view name) {
  for (std::size_t i = 0; i < secrets.size(); ++i)
    if (secrets[i].name == name) return i;
  return secret_template::no_secret;
}

// The secret whose value (or placeholder) `text` holds, or no_secret. Such text is never
// quoted in a message.
std::size_t holds_secret(std::string_view text, std::span<const compiled_secret> secrets) {
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    const std::string_view v = secrets[i].value.reveal();
    const std::string_view p = secrets[i].placeholder;
    if ((!v.empty() && text.find(v) != std::string_view::npos) ||
        (!p.empty() && text.find(p) != std::string_view::npos))
      return i;
  }
  return secret_template::no_secret;
}

// 'name', unless it holds a secret's value or placeholder (pasted into the wrong place).
std::string quoted_unless_secret(std::string_view name, std::span<const compiled_secret> secrets) {
  if (holds_secret(name, secrets) != secret_template::no_secret)
    return "(not shown: it holds a secret's value or placeholder)";
  return core::str_cat("'", name, "'");
}

std::string unknown_secret(std::string_view name, std::span<const compiled_secret> secrets) {
  if (!secret_name_shape(name) || holds_secret(name, secrets) != secret_template::no_secret)
    return "not a secret name (letters, digits, _ and -, declared under secrets)";
  return core::str_cat("unknown secret '", name, "' (declare it under secrets)");
}

secret_template parse_secret_template(std::string_view text,
                                      std::span<const compiled_secret> secrets,
                                      std::string& error) {
  constexpr std::string_view prefix = "secrets.";
  secret_template t;
  std::string literal;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t open = text.find("${", i);
    if (open == std::string_view::npos) {
      literal.append(text.substr(i));
      break;
    }
    literal.append(text.substr(i, open - i));
    const std::size_t close = text.find('}', open + 2);
    if (close == std::string_view::npos) {
      error = "unterminated '${' (a reference is ${secrets.NAME})";
      return {};
    }
    const std::string_view ref = text.substr(open + 2, close - open - 2);
    if (!ref.starts_with(prefix)) {
      // Not quoted: whatever stands there may be a pasted value.
      error = "only ${secrets.NAME} references may be used in a template";
      return {};
    }
    const std::string_view name = ref.substr(prefix.size());
    const std::size_t index = find_secret(secrets, name);
    if (index == secret_template::no_secret) {
      error = unknown_secret(name, secrets);
      return {};
    }
    t.parts.push_back({std::move(literal), index});
    literal.clear();
    i = close + 1;
  }
  if (!literal.empty() || t.parts.empty())
    t.parts.push_back({std::move(literal), secret_template::no_secret});
  return t;
}

void hide_secrets(error_sink& errors, std::span<const compiled_secret> secrets) {
  for (const auto& secret : secrets) {
    errors.hide(secret.value.reveal(), core::str_cat("(the value of secret ", secret.name, ")"));
    errors.hide(secret.placeholder, core::str_cat("(the placeholder of secret ", secret.name, ")"));
  }
}

}  // namespace airlock::policy
