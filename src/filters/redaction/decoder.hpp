#pragma once
// Streaming gzip/deflate decoding of a response body, chunk by chunk, with the output of each
// step bounded so that a small compressed chunk cannot blow up into unbounded memory. The
// caller watches total_out() and enforces its response size limit (decompression bombs).
//
//   decoder d(content_coding::gzip);
//   for each chunk: std::string_view in = chunk;
//     for (;;) { auto st = d.decode(in, out, 64 * 1024); use(out); out.clear();
//                if (st == decoder::status::output_full) continue;
//                if (st == decoder::status::error) fail closed; break; }
//   at the end of the body: d.complete() or the body was truncated.
//
// @par Thread Safety
// One decoder per body, one thread at a time.

#include "filters/redaction/content_coding.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::filters::redaction {

class decoder {
 public:
  enum class status {
    need_input,   // all of `in` is consumed; feed the next chunk
    output_full,  // `max_out` bytes were written; call again (input may remain, or not)
    done,         // the compressed stream ended; bytes after it are discarded
    error,        // corrupt data or unsupported coding; error() says which (never body bytes)
  };

  // gzip (also zlib data under that name) or deflate (zlib-wrapped, RFC 1950, or raw,
  // RFC 1951, told apart by the first two bytes). Any other coding fails on first use.
  explicit decoder(content_coding c);
  ~decoder();
  decoder(const decoder&) = delete;
  decoder& operator=(const decoder&) = delete;

  // Decodes from the front of `in` (consumed bytes are removed) and appends at most `max_out`
  // bytes to `out`.
  status decode(std::string_view& in, std::string& out, std::size_t max_out);

  // The stream (every gzip member) ended properly; false at the end of a body means truncated.
  bool complete() const noexcept;
  std::uint64_t total_in() const noexcept;
  std::uint64_t total_out() const noexcept;
  std::uint64_t trailing_bytes() const noexcept;  // discarded after the end
  const char* error() const noexcept;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace airlock::filters::redaction
