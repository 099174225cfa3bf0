#pragma once
// What an MCP body is, read from its head: the filter parses JSON-RPC as UTF-8 JSON and nothing
// else, so a body it would read otherwise than the receiver does must not pass unread. A server
// may decode a request in the charset the request names (the TypeScript SDK's HTTP+SSE server
// transport decodes with iconv-lite, UTF-7 included), where a body that is plain ASCII JSON to
// the filter hides a second tool name; a client may decode a listing answer likewise. RFC 8259
// section 8.1: JSON exchanged between systems is UTF-8 and application/json has no charset
// parameter, so only its absence or `charset=utf-8` is read.
//
// @par Thread Safety
// Pure functions.

#include <boost/beast/http/fields.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace airlock::filters::mcp {

// A Content-Type value (RFC 9110 section 8.3.1): type and subtype in lower case, parameter
// names in lower case, values unquoted (quoted-pair undone).
struct media_type {
  std::string type;
  std::string subtype;
  std::vector<std::pair<std::string, std::string>> params;

  bool is(std::string_view t, std::string_view s) const { return type == t && subtype == s; }
};

// Parses `value` strictly by RFC 9110's grammar (media-type = type "/" subtype
// *( OWS ";" OWS parameter ), parameter = token "=" ( token / quoted-string )); nullopt when
// it does not parse: readers that are less strict disagree on what it says.
std::optional<media_type> parse_media_type(std::string_view value);

// A head's body as the filter may read it.
struct body_reading {
  std::optional<media_type> type;  // absent: no Content-Type
  // Non-empty: the body cannot be read as UTF-8 JSON text, and why (names and values the
  // head carries, printable and bounded): Content-Type in several field lines (RFC 9110
  // section 8.3: a singleton; readers differ in which line they take) or not parsing, a
  // charset other than UTF-8 or several charsets, a content coding other than identity.
  std::string unreadable;
};
body_reading read_body_head(const boost::beast::http::fields& head);

// Why a POST to an MCP endpoint is refused before its body is read: "" when its head says it
// is application/json in UTF-8, unencoded (a charset=utf-8 parameter, case-insensitive and
// perhaps quoted, is the only one allowed).
std::string unreadable_request(const boost::beast::http::fields& head);

}  // namespace airlock::filters::mcp
