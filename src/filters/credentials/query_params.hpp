#pragma once
// Editing the query of a request target for injection: removing the agent's own parameters of
// a name, appending one.
//
// @par Thread Safety
// Free functions.

#include <string>
#include <string_view>

namespace airlock::filters::credentials {

// Removes from `target` ("/path?a=1&b=2") every parameter whose decoded name is `name`, or
// could be read as it by a lenient origin (validation::lenient_name_equal: case folding, PHP's
// "api.key" for "api_key", "api_key[]"). A name that cannot be decoded is compared as written.
void remove_query_param(std::string& target, std::string_view name);

// Appends name=value to the query of `target`, both percent-encoded (RFC 3986 unreserved
// characters stay as they are).
void append_query_param(std::string& target, std::string_view name, std::string_view value);

// RFC 3986 percent-encoding of everything but the unreserved characters.
std::string percent_encode(std::string_view text);

}  // namespace airlock::filters::credentials
