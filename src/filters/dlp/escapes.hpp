#pragma once
// The escapes of the formats a secret or an instruction travels in, undone as the reader at the
// other end undoes them: JSON's (a JSON parser: the agent's HTTP client, the exfiltration
// endpoint) and HTML's character references (a browser, or the HTML-to-text step of an agent's
// fetch tool). Each comes with a cheap test of whether undoing it could show anything a
// scanner does not already see: a second reading of a body costs as much as the first.

#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

// JSON string escapes (RFC 8259 section 7) undone wherever they stand: \" \\ \/ \b \f \n \r \t
// and \uXXXX (a surrogate pair joined; a lone surrogate becomes U+FFFD). An unknown or cut
// escape is kept. Returns nullopt when nothing changed.
std::optional<std::string> json_unescape(std::string_view s);

// Whether undoing JSON's escapes in `s` could show what the escaped text hides: a \uXXXX for a
// letter, a digit or a character of a secret's alphabet, or for one fold_confusables() folds or
// removes; or a "\/" next to a byte of base64 (inside base64 or a URL). Not the escapes every
// JSON encoder writes between words: "\n", "\t", "\"", \u for other non-ASCII characters
// (Python's json.dumps writes one for each) or for '<', '>', '&' (Go's encoding/json writes
// those).
bool json_escapes_may_hide(std::string_view s);

// HTML character references (WHATWG HTML 13.5, "character reference state") undone: numeric
// ones (&#105; &#x69;, the ';' optional as browsers allow) and the named ones text uses
// between words (&nbsp; &amp; &lt; &gt; &quot; &apos;). Other named references are kept.
// Returns nullopt when nothing changed.
std::optional<std::string> html_unescape(std::string_view s);

// Whether `s` has a numeric character reference for a letter or a digit, or for a character
// fold_confusables() folds or removes ("&#105;gnore previous instructions"); the references
// pages use for punctuation and typography (&#39; &#8217; &#160;) are not.
bool html_references_may_hide(std::string_view s);

// The \xHH escapes of program source (C, C++, Python, JavaScript, Go, Rust string literals)
// undone: each becomes its byte. Returns nullopt when nothing changed.
std::optional<std::string> hex_byte_unescape(std::string_view s);

// Whether `s` has a \xHH for a letter, a digit or a character of a secret's alphabet (not the
// \x00 and \x1b of binary and terminal text).
bool hex_byte_escapes_may_hide(std::string_view s);

// Calls `f(std::string_view unescaped)` with `s` as a JSON parser, an HTML reader and a
// program's string literal undo it, each only when its escapes may hide something (above), until
// `f` returns true; returns whether it did. A second reading costs as much as the first, so
// ordinary text gets none.
template <class F>
bool read_unescaped(std::string_view s, F&& f) {
  if (json_escapes_may_hide(s))
    if (auto unescaped = json_unescape(s); unescaped && f(std::string_view(*unescaped)))
      return true;
  if (html_references_may_hide(s))
    if (auto unescaped = html_unescape(s); unescaped && f(std::string_view(*unescaped)))
      return true;
  if (hex_byte_escapes_may_hide(s))
    if (auto unescaped = hex_byte_unescape(s); unescaped && f(std::string_view(*unescaped)))
      return true;
  return false;
}

}  // namespace airlock::filters::dlp
