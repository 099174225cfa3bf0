#pragma once
// A rule's parameter checks as a filter: query (percent-decoded; unknown parameters refused,
// stripped or allowed), headers, the body's size, and a JSON body, which is held whole (up to
// the rule's limit) and checked before any byte of it is forwarded. Refusals name the parameter
// and the constraint, never the value; report mode (applied by the chain) lets them through.

#include "filters/filter.hpp"

namespace airlock::filters::validation {

class validation_factory final : public filter_factory {
 public:
  // Null for a CONNECT (nothing of the request is visible).
  filter* create(const exchange& ex, std::pmr::memory_resource& arena) const override;
};

}  // namespace airlock::filters::validation
