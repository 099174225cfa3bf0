#pragma once
// The response side of DLP (issue 16): a text body read once for prompt injection
// (injection.hpp), then passed, passed behind a warning line, or withheld.
//
// The body is held until `limit` bytes of its text were read (or it ends) and judged once;
// the rest then passes as it comes. A body in gzip or deflate (RFC 9110 section 8.4.1) is
// decoded for reading only: what passes on is the bytes as the origin sent them, so no
// re-encoding is paid for and a decompression bomb costs at most `limit` bytes of text. A
// withheld body is a marker line in the same coding; a warning line under `annotate` is put
// before the decoded text and the whole re-encoded, which is only possible while the whole
// body is held: a longer coded body with a finding under `annotate` is withheld instead.
// A coding the proxy cannot read (br, zstd, stacked codings) or corrupt data is withheld
// under `block` (fail closed) and passed, recorded as "unreadable-coding", otherwise.
//
// @par Thread Safety
// One per response body, one thread.

#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/decoder.hpp"
#include "policy/dlp.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::filters::dlp {

inline constexpr std::string_view kUnreadableCoding = "unreadable-coding";

class response_scan {
 public:
  // `events`: the body is a server-sent event stream, also read as its joined text
  // (event_text.hpp).
  response_scan(policy::model::response_action action, std::size_t limit,
                redaction::content_coding coding, bool events = false);

  // What was found and done, once the body is judged.
  struct outcome {
    std::string_view cls;     // an injection class, or kUnreadableCoding
    std::string_view action;  // "block", "annotate" or "report"
  };

  // Takes one piece of the body (`last` at its end) and appends to `out` what may go on now.
  // `enough` is set when the body was withheld: read no more of it.
  void write(std::string_view piece, bool last, std::string& out, bool& enough);

  // Set once the body was judged and something was found.
  const std::optional<outcome>& found() const noexcept { return found_; }

 private:
  void decode(std::string_view piece);
  void judge(bool whole, std::string& out, bool& enough);
  void withhold(std::string_view why, std::string& out, bool& enough);
  std::optional<std::string_view> find_injection_in_text() const;

  policy::model::response_action action_;
  std::size_t limit_;
  redaction::content_coding coding_;
  std::optional<redaction::decoder> decoder_;
  std::string held_;  // the body as it came, until judged
  std::string text_;  // its text (decoded where coded), at most limit_ bytes
  bool events_ = false;
  bool unreadable_ = false;
  bool decided_ = false;
  std::optional<outcome> found_;
};

}  // namespace airlock::filters::dlp
