#pragma once
// A secret behind escapes. The stream (stream.hpp) redacts a secret's value as written and in
// the spellings secret_spellings.hpp lists, but a JSON parser reads "\u0073k-live-..." as
// "sk-live-...", an HTML parser reads "&#115;k-live-..." the same way, and an origin may escape
// any character it likes: no list of spellings covers them all. The guard reads the redacted
// text through those escapes, JSON's (RFC 8259 section 7: \uXXXX, surrogate pairs included, and
// \" \\ \/ \b \f \n \r \t) and HTML's character references (&#NNN; and &#xHH;, the ';'
// optional, and the named ones for ASCII characters, &sol; and the like: html_reference.hpp)
// and percent-encoding (RFC 3986 section 2.1, every byte
// of the value escaped or some), and follows the text so read through the secrets' spellings
// (secret_automaton.hpp), and once more decoded a second time (escape_layer.hpp: a value
// escaped twice, HTML inside JSON as Go writes it, "\u0026#115;", a URL inside a URL, JSON
// inside a JSON string); JavaScript's \xHH and \u{H...} are read as escapes too, and a line
// break that wraps encoded text (base64 as MIME and PEM write it, hex as xxd -p) as nothing, as
// their decoders read it (escape_layer.hpp). The raw text
// behind the start of a spelling (or an escape
// not yet complete) is held back until it is known not to go on; a spelling that ends in the
// text so read cuts the body (write() returns false): a secret never reaches the client.
//
// Bytes are read one at a time only from an escape on, until the text read no longer ends with
// a spelling's start; elsewhere the guard looks for the next '\', '&', '%' or line break after
// a character of encoded text and, before it, reads only the bytes a spelling could start in.
//
// @par Thread Safety
// One per response, one thread at a time; the engine's automaton must outlive it.

#include "filters/redaction/engine.hpp"
#include "filters/redaction/escape_layer.hpp"
#include "filters/redaction/secret_automaton.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

class escape_guard {
 public:
  explicit escape_guard(const engine& e);

  // Redacted text in; appends to `out` what may go on. False when a secret was read behind
  // escapes: nothing more may be sent.
  bool write(std::string_view redacted, std::string& out);
  // The body ended: what is held goes on.
  void finish(std::string& out);

  const char* why() const noexcept { return why_; }

 private:
  // Raw text before the next escape, read only where a spelling could start in its last bytes.
  bool skim(std::string_view text, std::uint64_t at);
  // The absolute offset of the next escape character `c` in pending_ from `from` (`end` if
  // none); a line break only where the raw byte before it may end a line of encoded text.
  std::uint64_t find_escape(char c, std::uint64_t from, std::uint64_t end) const;
  // Where the held-back raw text begins (absolute offset).
  std::uint64_t hold_from() const noexcept;
  bool fail();  // (why_ from the layers)

  const secret_automaton& starts_;
  std::size_t reach_;  // the longest spelling
  // The raw text decoded once, and what that decodes to once more (escape_layer.hpp).
  std::array<escape_layer, 2> layers_;
  std::string pending_;              // raw text not yet released
  std::uint64_t pending_at_ = 0;     // absolute offset of pending_[0]
  std::uint64_t scanned_ = 0;        // absolute offset up to which raw text was read
  unsigned char released_last_ = 0;  // the raw byte before pending_ (the last one let go)
  const char* why_ = nullptr;
};

}  // namespace airlock::filters::redaction
