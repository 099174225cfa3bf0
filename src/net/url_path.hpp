#pragma once
// What an origin server may do to a request path after the proxy has checked it: RFC 3986
// section 5.2.4 removes dot segments ("/a/../b" is "/b"), and many servers decode an encoded
// slash or backslash ("%2f", "%5c") into a separator before they route. A check that matches
// a path's text (a rule's `paths`, a grant's path prefix) must not accept such a path as being
// under the prefix it appears to be under.

#include <string_view>

namespace airlock::net {

// "/a/../b", "/a/./b", "/..", and their percent-encoded forms ("%2e%2E"); also behind a
// separator a server may decode or read as one ("/a/..%2fb", "/a\\..\\b", "/a/%5c..%5cb"), and
// with parameters a servlet container drops ("/a/..;x/b").
bool has_dot_segment(std::string_view path) noexcept;

// "%2f", "%5c" (any case) or a raw backslash: a separator the path's text does not show.
bool has_hidden_separator(std::string_view path) noexcept;

}  // namespace airlock::net
