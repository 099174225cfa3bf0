#pragma once
// JSON as clients read it that Boost.JSON 1.81 refuses even with its lenient options: Python's
// json module writes and reads NaN, Infinity and -Infinity (json.dumps does by default, so a
// Python server that streams a float that is not finite sends them), and JavaScript's
// JSON.parse and Python's json.loads take a lone UTF-16 surrogate escape ("\ud800"), which
// RFC 8259 section 8.2 leaves to the implementation. The guards read every string of an
// event (event_text.hpp) and cut a stream whose JSON they cannot parse; relaxing those two first
// keeps such a stream flowing. Strings keep their other characters; the relaxed text is only
// read, never sent.
//
// @par Thread Safety
// A pure function.

#include <string>
#include <string_view>

namespace airlock::filters::redaction {

// `json` with NaN, Infinity and -Infinity outside strings read as null, and each lone
// surrogate escape inside a string as \ufffd (U+FFFD, as a UTF-8 decoder reads an invalid
// sequence); false when there was nothing to relax (`out` is then unspecified).
bool relax_json(std::string_view json, std::string& out);

}  // namespace airlock::filters::redaction
