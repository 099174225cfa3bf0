#pragma once
// A rule's query checks applied to a request's query string.

#include "filters/validation/violation.hpp"
#include "policy/checks.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::validation {

// `raw_query` is the request target after the first '?' (without it; may be empty). Names and
// values are compared after application/x-www-form-urlencoded decoding ('+' is a space, %XX a
// byte); `a` and `a=` both give `a` an empty value; empty pieces ("a=1&&b=2") are ignored.
//
// Refused at the first offending parameter in the order sent (a missing one last), when:
//   - a name or value with a malformed %-escape, a decoded NUL or invalid UTF-8 ("encoding";
//     the value of a parameter that is stripped is not read);
//   - a raw ';' in a parameter that is kept ("encoding"): some origins split on ';' as well as
//     '&', so "page=1;admin=1" would smuggle a parameter past these checks (send it as %3B);
//   - a value of a listed parameter that does not match its pattern in full (every value of a
//     repeated parameter is checked);
//   - a parameter not listed, when unknown is refuse ("unknown parameter"); when unknown is
//     allow, also one that a lenient origin could read as a listed one (see
//     lenient_name_equal: "PER_PAGE" for ASP.NET, "per.page" and "per_page[]" for PHP);
//   - a required parameter that is absent ("required").
// With unknown: strip, unlisted parameters are removed and `rewritten` is set to the query
// that remains: the kept parameters byte for byte, in order, joined by '&' (empty = drop the
// '?'). `rewritten` is left empty (nullopt) when nothing was removed.
//
// No allocation when the rule has no query checks, or when no name or value needs decoding.
std::optional<violation> check_query(const policy::compiled_query& checks,
                                     std::string_view raw_query,
                                     std::optional<std::string>& rewritten);

}  // namespace airlock::filters::validation
