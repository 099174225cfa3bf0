#pragma once
// A rule's JSON body checks applied to a request body.

#include "filters/validation/violation.hpp"
#include "policy/checks.hpp"

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace airlock::filters::validation {

// Does nothing (and allocates nothing) unless the rule says the body is JSON. Otherwise the
// body must be one RFC 8259 JSON text (UTF-8, no comments, no trailing commas, no BOM, nothing
// after it) nested at most policy::max_json_depth deep ("valid JSON", "max depth 64"), with
// no object anywhere holding the same key twice ("duplicate key": origins disagree on which
// one counts, so checking either would let the other through) and no key containing U+0000
// ("encoding": C-string origins would cut it short). When fields are given the root must be
// an object ("type object").
//
// Each field's dotted path is looked up from the root, after JSON unescaping ("mo\u0064el" is
// "model"). Every object along the path must hold the key exactly as written: a key differing
// only in case (or by U+017F/U+212A) is refused ("exact name"), since origins that bind
// fields case-insensitively (Go's encoding/json) would read it as the constrained one. A
// missing field passes unless required ("required"); a present one whose parent is not an
// object is refused ("type object" on the parent). Then, in this order:
//   type       string, number (finite), integer, boolean, object, array, null ("type <t>").
//              integer means a literal without fraction or exponent that fits int64 or uint64:
//              3.0 and 3e0 are NOT integers (an origin may parse them as floats).
//   pattern    the value must be a string matching in full ("type string", "pattern <re>").
//   max_length code points of a string, elements of an array ("type string or array",
//              "max_length <n>").
//   minimum, maximum  the value must be a finite number within the bounds, compared exactly
//              (no rounding of 64-bit integers) ("type number", "minimum <x>", "maximum <x>").
//   enum       strings equal byte for byte, numbers by value (integers exactly), booleans by
//              value; null, objects and arrays never match ("enum").
std::optional<violation> check_json(const policy::compiled_body& checks, std::string_view body);

// The two halves of check_json for a caller that reads the document itself (the MCP filter):
// the strict parse above (its refusals as check_json's, the document built in `sp`), and the
// fields' checks against an object. Either may throw std::bad_alloc.
std::optional<violation> parse_json(std::string_view body, boost::json::storage_ptr sp,
                                    boost::json::value& out);
std::optional<violation> check_fields(const std::vector<policy::compiled_json_field>& fields,
                                      const boost::json::object& root);

}  // namespace airlock::filters::validation
