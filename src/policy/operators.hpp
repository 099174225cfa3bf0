#pragma once
// The admin port's operators (`operators:` in the policy, model::operator_token): the load's
// checks of their token hashes, and the lookup of a presented Bearer token.
//
// Thread safety: pure functions over the (immutable) model they are given.

#include "policy/error_sink.hpp"
#include "policy/model.hpp"

#include <string_view>

namespace airlock::policy {

// Each token_sha256 must be 64 hex digits (lower-cased here) and name one operator; operator
// names are letters, digits, '_', '.', '-' (they appear in the audit trail as `by`).
void check_operators(model::policy& p, const mark_table& marks, error_sink& errors);

// The operator whose token_sha256 is SHA-256(token), or null. Every configured hash is
// compared in constant time, without an early exit, so the time taken says nothing about
// which (or whether a) hash matched.
const model::operator_token* find_operator(const model::policy& p, std::string_view token);

}  // namespace airlock::policy
