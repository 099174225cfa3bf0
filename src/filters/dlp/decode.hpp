#pragma once
// The decoders DLP looks through (issue 16): what an agent, or an attacker steering one, uses
// to hide a secret from a scanner that reads only the bytes on the wire. Each is lenient where
// encoders differ (padding, case, '+' for a space) and returns nothing rather than guess.

#include "core/ascii.hpp"
#include "core/text_stats.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

using core::hex_value;  // (one hex digit's value, or -1)

// One round of percent-decoding (RFC 3986 section 2.1); `plus_space`: '+' is a space, as in a
// form or a query (WHATWG application/x-www-form-urlencoded). A '%' not followed by two hex
// digits is kept.
std::string percent_decode(std::string_view s, bool plus_space);

// Quoted-printable (RFC 2045 section 6.7, a MIME part's Content-Transfer-Encoding): "=HH" is a
// byte, '=' at the end of a line a soft line break. Nullopt unless there was one of either.
std::optional<std::string> quoted_printable_decode(std::string_view s);

// The text without its NUL bytes, when they are an eighth of it or more: UTF-16 or UTF-32 text
// (a body that says so, or one a server sniffs as such), in which every ASCII character has
// one or three NUL bytes beside it, read as the ASCII it spells. Nullopt otherwise.
std::optional<std::string> without_nuls(std::string_view s);

// Base64 (RFC 4648 section 4) or base64url (section 5), padding optional; nullopt on any other
// byte or an impossible length.
std::optional<std::string> base64_decode(std::string_view s);
// Whether `c` can be part of what base64_decode reads: either alphabet, or the padding '='.
bool base64_byte(char c) noexcept;
// Base32 (RFC 4648 section 6), either case, padding optional.
std::optional<std::string> base32_decode(std::string_view s);
// Hex pairs, either case, optionally separated by one '-', ':' or ' ' between every pair
// ("41-4b-49"); nullopt on an odd count or a foreign byte.
std::optional<std::string> hex_decode(std::string_view s);

// The bytes of a hex dump as `xxd`, `hexdump -C` and `od -A x -t x1z` write one: lines of an
// offset (six hex digits or more, then ':' or a space), then 16 bytes in hex (in pairs or groups,
// one or two spaces apart), then the bytes as text, which is left out: the text column cuts a
// key at every 16 bytes, the joined hex does not. Nullopt unless two such lines follow each
// other. Lines of other widths are not read.
std::optional<std::string> hexdump_decode(std::string_view s);

// Text as a person reads it: zero-width and invisible format characters removed (U+200B..U+200F,
// U+2060..U+2064, U+FEFF, U+00AD, U+180E), the other spaces (U+00A0, U+2000..U+200A, U+3000...)
// made ASCII spaces, full-width ASCII (U+FF01..U+FF5E), the mathematical letters and digits
// (U+1D400.., bold to monospace) and circled letters folded to ASCII, and the Cyrillic and Greek
// letters that look like Latin ones (Unicode confusables, UTS #39) mapped to them. A byte that does
// not start a well-formed UTF-8 sequence is kept as it is and never swallows the bytes after it.
// Returns nullopt when nothing changed (the common case: no copy).
std::optional<std::string> fold_confusables(std::string_view s);
// Whether fold_confusables() removes `cp` or maps it to ASCII.
bool folds_away(std::uint32_t cp) noexcept;
// A space that is not ASCII's (Unicode category Zs: U+00A0, U+2000..U+200A, U+3000, ...).
bool unicode_space(std::uint32_t cp) noexcept;

// The printable ASCII stretches of decoded bytes (8 bytes or more), one per line: a secret or an
// instruction embedded in binary ("\xde\xad...AKIA...\x00") is read without the binary around it.
std::string printable_runs(std::string_view bytes);

// printable_share and shannon_entropy (core/text_stats.hpp), which data-like host names share.
using core::printable_share;
using core::shannon_entropy;

}  // namespace airlock::filters::dlp
