#pragma once
// Private to the policy component: YAML text -> model::policy. Checks the shape of the file
// (known keys, types, sizes, durations, booleans, integers, enums) and applies defaults;
// meaning (hosts, regexes, CIDRs, references between agents and rules, files) is the
// compiler's job. Every value's position is recorded in `marks` under its dotted key.

#include "policy/error_sink.hpp"
#include "policy/model.hpp"

#include <string>
#include <string_view>

namespace airlock::policy {

// base_dir: the policy file's folder; relative file paths in the policy are resolved against
// it (left as they are when base_dir is empty).
void parse_policy(std::string_view yaml, const std::string& base_dir, model::policy& out,
                  mark_table& marks, error_sink& errors);

// An included file (`include:`, parser_approvals.cpp): its rules and agents' rule lists added
// to `out`; `key` ("include[0]") names its entries in errors, which `errors` (made for that
// file) collects.
void parse_included(std::string_view yaml, const std::string& base_dir, const std::string& key,
                    model::policy& out, mark_table& marks, error_sink& errors);

// Levenshtein distance with adjacent transpositions (optimal string alignment), for "did you
// mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace airlock::policy
