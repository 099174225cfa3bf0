#pragma once
// Streaming gzip/deflate encoding of a redacted body, for when the response goes back to the
// client in the coding the upstream used. (A proxy may also send the redacted body as identity
// and drop Content-Encoding: every client accepts identity unless it says "identity;q=0".)
//
// @par Thread Safety
// One encoder per body, one thread at a time.

#include "filters/redaction/content_coding.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

class encoder {
 public:
  // gzip (RFC 1952) or deflate (zlib-wrapped, RFC 1950, as RFC 9110 section 8.4.1.2 says).
  // Level 1 by default: the proxy pays for every byte, and redacted bodies are mostly text.
  explicit encoder(content_coding c, int level = 1);
  ~encoder();
  encoder(const encoder&) = delete;
  encoder& operator=(const encoder&) = delete;

  // False if the coding is not gzip/deflate or zlib failed; the methods then do nothing.
  bool ok() const noexcept;
  // Appends whatever compressed output is ready.
  void write(std::string_view in, std::string& out);
  // Sync flush: the client can decode everything written so far (one per event for event
  // streams, so that compression does not hold events back).
  void flush(std::string& out);
  // Ends the stream (trailer included). Nothing may be written afterwards.
  void finish(std::string& out);

 private:
  void run(std::string_view in, int mode, std::string& out);
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace airlock::filters::redaction
