#pragma once
// A rule's header checks applied to a request's header fields.

#include "filters/validation/violation.hpp"
#include "policy/checks.hpp"

#include <boost/beast/http/fields.hpp>

#include <optional>

namespace airlock::filters::validation {

// Names compare case-insensitively (RFC 9110 section 5.1). Refused, in this order:
//   - a required header that is absent ("required"; present with an empty value counts);
//   - a forbidden header, any number of times ("forbidden");
//   - a patterned header with any instance whose value does not match in full; the value is
//     taken without leading and trailing SP/HTAB (RFC 9110 section 5.5), and a CR, LF or NUL
//     in it ("encoding") is refused whatever the pattern says: no parser puts one there, so
//     the fields were built by hand or smuggled.
// No allocation unless a violation is returned.
std::optional<violation> check_headers(const policy::compiled_headers& checks,
                                       const boost::beast::http::fields& fields);

}  // namespace airlock::filters::validation
