#pragma once
// model::rule's request checks (query, headers, body) -> policy::compiled_checks: names
// normalised, params sorted, re2 patterns built, enum entries parsed, and every mistake that
// would make a check impossible, ambiguous or dead reported against its key.

#include "policy/checks.hpp"
#include "policy/model.hpp"

#include <functional>
#include <string>

namespace airlock::policy {

// Called once per mistake. `key` is relative to the rule, in the loader's dotted form
// ("query.params.per_page", "headers.forbidden[1]", "body.json.user.name.enum[0]"); the caller
// prefixes it with "rules[i].". Messages name the offending entry but never a request value.
using check_error = std::function<void(const std::string& key, std::string message)>;

// Always returns the checks it could build; the caller must discard them when `error` was
// called. Query and header patterns must match a whole value (re2 full match), as must JSON
// string patterns.
//
// Errors reported:
//   query   : a pattern that does not compile; an empty, duplicated or never-matchable name
//             (NUL or invalid UTF-8); a required name that is duplicated, or that is not in
//             `params` while unknown parameters are refused or stripped (no request could pass,
//             or it would be required and then removed).
//   headers : a name that is not an RFC 9110 token; a name listed twice (case-insensitively);
//             a name both required and forbidden; a pattern for a forbidden header (it could
//             never apply); a pattern that does not compile.
//   body    : an empty or malformed dotted path ("", ".", "a..b", ".a", "a."), a path deeper
//             than max_json_depth, a duplicated path; a constraint that does not fit the type
//             (pattern on a non-string, max_length on a non-string/array, minimum or maximum
//             on a non-number, enum on an object/array/null), constraints that no single value
//             can satisfy together (pattern with minimum, ...); an enum entry that cannot be of
//             the type; minimum > maximum or a non-finite bound; a path under a field that
//             cannot be an object ("user" of type string and "user.name").
//
// Thread safety: none needed; pure function of its arguments.
compiled_checks compile_checks(const model::rule& rule, const check_error& error);

// The JSON field constraints of a body (or of an MCP tool's arguments), with the body's errors
// above; keys are `prefix` + the field's path ("body.json.user.name").
std::vector<compiled_json_field> compile_json_fields(const std::vector<model::json_field>& fields,
                                                     std::string_view prefix,
                                                     const check_error& error);

}  // namespace airlock::policy
