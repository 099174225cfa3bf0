#pragma once
// Small text helpers shared by the validation checks: strict UTF-8, form-style percent
// decoding, the case folding that lenient origins apply to names, and making names safe to
// put in a Proxy-Status header.

#include "core/utf8.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::validation {

// RFC 3629 well-formed UTF-8 (the one implementation is core's).
using core::valid_utf8;

// Unicode code points in valid UTF-8 (the bytes that are not continuation bytes).
std::size_t code_points(std::string_view s) noexcept;

// One query component (name or value), decoded as application/x-www-form-urlencoded does
// (WHATWG URL, "urlencoded parsing"): '+' is a space, %XX a byte. Returns a view of `raw`
// itself when there is nothing to decode (no allocation), else of `buf`. Null when a %-escape
// is malformed or the result has a NUL or is not valid UTF-8: such a component means
// different things to different parsers, so it is refused rather than guessed at.
std::optional<std::string_view> form_decode(std::string_view raw, std::string& buf);

// Whether two names are equal after the case folding lenient parsers apply (ASP.NET query
// names, Go's encoding/json field matching): ASCII case, plus U+017F LATIN SMALL LETTER LONG S
// = 's' and U+212A KELVIN SIGN = 'k', the only non-ASCII letters whose simple case folding is
// ASCII.
bool fold_equal(std::string_view a, std::string_view b) noexcept;

// Whether a lenient origin could read query parameter `name` as `listed` when they differ:
// fold_equal's case folding, PHP's dropping of leading spaces and turning ' ', '.' and '[' into
// '_' ("per.page" is $_GET['per_page']), and PHP/Rack array syntax ("per_page[]", "per_page[k]").
bool lenient_name_equal(std::string_view name, std::string_view listed) noexcept;

// A name (or pattern) fit for an error message that ends up in a header and a log: printable
// ASCII as is, every other byte as \xNN, at most `max` characters (then "..."). Quotes and
// backslashes are left for the header writer to escape (proxy::quote_for_header does).
std::string printable(std::string_view s, std::size_t max = 64);

}  // namespace airlock::filters::validation
