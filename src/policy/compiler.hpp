#pragma once
// Private to the policy component: model::policy -> immutable snapshot. Checks what the
// parser cannot (hosts, regexes, CIDRs, addresses, tokens, names and references, TLS files)
// and precompiles every matcher, so that decide() only looks things up.

#include "policy/error_sink.hpp"
#include "policy/loader.hpp"
#include "policy/snapshot.hpp"

#include <memory>

namespace airlock::policy {

struct compiler {
  // Null (and errors added) when the policy is not valid; errors already in `errors` (from the
  // parser) also make the result null, but the checks still run so every error is reported.
  static std::shared_ptr<const snapshot> compile(model::policy policy, const mark_table& marks,
                                                 const load_options& options, error_sink& errors);
};

}  // namespace airlock::policy
