#pragma once
// A JSON string's text as a client may decode it again: JSON's escapes (a string that holds
// JSON, as a tool call's arguments do; \uXXXX, the one-letter ones, and JavaScript's \xHH),
// percent-encoding (RFC 3986 section 2.1) and HTML character references (&#NNN; and &#xHH;, the ';'
// optional, leading zeros any; the named ones for ASCII characters: html_reference.hpp). The event
// guard (event_guard.hpp) follows a field joined across events this way too, so a secret an origin
// streams percent-encoded,
// "%73%6b%2d" in one event and the rest in the next, is seen whole; within one event the escape
// guard (escape_guard.hpp) reads it. An escape may itself be split between two events ("%7" then
// "3"): what is not yet complete is the `tail`, read again in front of the field's next string.
//
// @par Thread Safety
// Pure functions.

#include <string>
#include <string_view>

namespace airlock::filters::redaction {

// The longest tail kept: a name of 16 characters after its "&" (numeric ones are shorter:
// "&#x", a zero for any leading zeros, and eight digits).
inline constexpr std::size_t kMaxEscapeTail = 17;

// Whether `text` holds anything decode_field_escapes would change or keep as a tail.
bool has_field_escapes(std::string_view text) noexcept;

// `tail` (the previous string's incomplete escape, if any) then `text`, decoded into `decoded`
// (replaced); the incomplete escape at its end, if any, into `next_tail` (replaced). A '%' or
// '&' that starts no escape stays as written.
void decode_field_escapes(std::string_view tail, std::string_view text, std::string& decoded,
                          std::string& next_tail);

// A tail read as if its text ended there: a reference with digits ("&#115", "&#x7") or a
// legacy name ("&amp") is one (the end of a string ends it for a client that decodes each
// string on its own) and its character goes to `out` (replaced); false for any other tail.
bool decode_tail_as_ended(std::string_view tail, std::string& out);

}  // namespace airlock::filters::redaction
