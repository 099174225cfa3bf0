#pragma once
// The names of the redaction library's built-in redactors (src/filters/redaction/builtin.hpp),
// which policy cannot include (filters depends on policy, not the other way round). A custom
// redactor may not take one of these names; the policy tests check that this list is exactly
// filters::redaction::builtin_names().

#include <span>
#include <string_view>

namespace airlock::policy {

std::span<const std::string_view> builtin_redactor_names() noexcept;
bool is_builtin_redactor(std::string_view name) noexcept;

}  // namespace airlock::policy
