#pragma once
// Response redaction as a filter. Applies under a rule that redacts or injects, or when a
// placeholder was swapped for its value: header values at once, a text body as it streams
// (decoded and re-encoded, cut off past the rule's max_bytes with a marker line), a binary body
// byte for byte unless it carries a secret. A response the proxy cannot read (br, zstd,
// UTF-16, a protocol switch) fails closed, and so does one that decodes, or is encoded again,
// past limits.response_bytes (response_too_large). Every engine redacts every secret of the
// policy.

#include "filters/filter.hpp"

#include <memory>

namespace airlock::filters::redaction {

class rule_engines;

class redaction_factory final : public filter_factory {
 public:
  explicit redaction_factory(std::shared_ptr<const rule_engines> engines)
      : engines_(std::move(engines)) {}
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;

 private:
  std::shared_ptr<const rule_engines> engines_;
};

}  // namespace airlock::filters::redaction
