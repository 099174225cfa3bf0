#include "policy/redactor_names.hpp"

#include <algorithm>
#include <array>

namespace airlock::policy {
namespace {

constexpr std::array<std::string_view, 22> kNames = {"aws-access-key",
                                                     "aws-secret-key",
                                                     "gcp-api-key",
                                                     "gcp-service-account",
                                                     "github-token",
                                                     "gitlab-token",
                                                     "slack-token",
                                                     "slack-webhook",
                                                     "jwt",
                                                     "pem-private-key",
                                                     "email",
                                                     "payment-card",
                                                     "phone",
                                                     "stripe-key",
                                                     "anthropic-key",
                                                     "openai-key",
                                                     "sendgrid-key",
                                                     "azure-connection-string",
                                                     "database-url",
                                                     "iban",
                                                     "bitcoin-address",
                                                     "wif-key"};

}  // namespace

std::span<const std::string_view> builtin_redactor_names() noexcept {
  return kNames;
}

bool is_builtin_redactor(std::string_view name) noexcept {
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

}  // namespace airlock::policy
