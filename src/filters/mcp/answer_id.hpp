#pragma once
// Whether a server's answer carries the id of a request, as the client that sent it decides:
// the TypeScript SDK looks its handler up by Number(response.id) (Protocol._onresponse), so
// "1", " 1 ", "1.0", "0x1" and 1.0 all answer request 1, where the JSON texts differ. The
// listing filter must take for a listing answer whatever a client takes for one.
//
// @par Thread Safety
// Pure functions.

#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace airlock::filters::mcp {

// ECMAScript's ToNumber of a JSON-RPC id (ECMA-262 section 7.1.4.1.1, StringToNumber, for a
// string): a number's value, a numeric string's (white space trimmed; "" is 0; decimal with
// sign and exponent, or 0x/0o/0b), nullopt for anything else (NaN) and for other JSON types
// (JSON-RPC ids are strings or numbers; the SDKs refuse others).
std::optional<double> id_number(const boost::json::value& id);

// Whether `answer_id` answers the request whose id is `request_id` (JSON text): the same JSON
// value, or the same number by id_number.
bool answers_id(const boost::json::value& answer_id, std::string_view request_id);

}  // namespace airlock::filters::mcp
