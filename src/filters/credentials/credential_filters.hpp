#pragma once
// Credentials as three filters of the chain (pipeline.hpp gives their places):
//   placeholder_guard  a secret's placeholder sent to a host the secret is not bound to is an
//                      exfiltration attempt, refused whatever the rules say: in the head (CONNECT
//                      included) and in a request body as it streams;
//   placeholder_require  placeholders a rule insists on (the agent's tool must be the one it
//                      was handed);
//   injection          just before the head goes upstream: placeholders swapped for the values
//                      on bound hosts, then the rule's own credentials (the agent's values of
//                      those headers and parameters removed first).

#include "filters/filter.hpp"

#include <span>

namespace airlock::policy {
struct compiled_secret;
}

namespace airlock::filters::credentials {

class placeholder_guard_factory final : public filter_factory {
 public:
  explicit placeholder_guard_factory(std::span<const policy::compiled_secret> secrets);
  // Null when no secret has a placeholder (nothing to look for).
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::span<const policy::compiled_secret> secrets_;
  bool any_placeholder_ = false;
};

class placeholder_require_factory final : public filter_factory {
 public:
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;
};

class injection_factory final : public filter_factory {
 public:
  explicit injection_factory(std::span<const policy::compiled_secret> secrets)
      : secrets_(secrets) {}
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::span<const policy::compiled_secret> secrets_;
};

}  // namespace airlock::filters::credentials
