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
// (secret_automaton.hpp). The raw text behind the start of a spelling (or an escape
// not yet complete) is held back until it is known not to go on; a spelling that ends in the
// text so read cuts the body (write() returns false): a secret never reaches the client.
//
// Bytes are read one at a time only from an escape on, until the text read no longer ends with
// a spelling's start; elsewhere the guard looks for the next '\', '&' or '%' and, before it,
// reads only the bytes a spelling could start in.
//
// @par Thread Safety
// One per response, one thread at a time; the engine's automaton must outlive it.

#include "filters/redaction/engine.hpp"
#include "filters/redaction/secret_automaton.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  enum class mode : std::uint8_t {
    text,
    backslash,
    json_hex,
    amp,
    amp_name,
    amp_hash,
    amp_digits,
    percent
  };

  // One raw byte (at absolute offset `at`) through the decoder; false on a secret.
  bool take(unsigned char c, std::uint64_t at);
  // One decoded byte, that began at raw offset `from`; false on a secret.
  bool read(unsigned char c, std::uint64_t from);
  bool read_code_point(char32_t cp, std::uint64_t from);
  // One byte after "&" and a letter or digit: a named reference goes on or ends.
  bool take_name(unsigned char c, std::uint64_t at);
  // Raw text before the next escape, read only where a spelling could start in its last bytes.
  bool skim(std::string_view text, std::uint64_t at);
  // Where the held-back raw text begins (absolute offset).
  std::uint64_t hold_from() const noexcept;

  const secret_automaton& starts_;
  std::size_t reach_;  // the longest spelling
  secret_automaton::state st_ = 0;
  std::string pending_;                // raw text not yet released
  std::uint64_t pending_at_ = 0;       // absolute offset of pending_[0]
  std::uint64_t scanned_ = 0;          // absolute offset up to which raw text was read
  std::vector<std::uint64_t> origin_;  // raw offset each of the last reach_ decoded bytes began at
  std::uint64_t decoded_ = 0;          // decoded bytes read
  mode mode_ = mode::text;
  std::uint64_t escape_at_ = 0;  // raw offset of the escape being read
  std::uint32_t value_ = 0;      // its digits so far
  int digits_ = 0;
  bool hex_ = false;
  char pct_first_ = 0;  // a percent escape's first digit
  char32_t high_ = 0;   // a JSON high surrogate waiting for its low half
  std::string utf8_;    // a decoded code point's bytes (kept: no allocation per escape)
  std::string name_;    // a named reference's name so far
  const char* why_ = nullptr;
};

}  // namespace airlock::filters::redaction
