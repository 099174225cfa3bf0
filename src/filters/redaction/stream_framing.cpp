// Where a segment of a framed stream ends (stream_options::frame): after each line, or after
// each server-sent event (a line ending followed by an empty line, "\n" or "\r\n"; the
// WHATWG HTML "server-sent events" format).
#include "filters/redaction/stream.hpp"

#include <algorithm>
#include <cstring>

namespace airlock::filters::redaction {

std::size_t stream::next_delimiter() {
  const std::size_t end = buf_off_ + buf_.size();
  auto byte_at = [&](std::size_t p) { return buf_[p - buf_off_]; };
  std::size_t p = std::max({delim_from_, seg_begin_, buf_off_});
  while (p < end) {
    const void* hit = std::memchr(buf_.data() + (p - buf_off_), '\n', end - p);
    if (hit == nullptr) break;
    const std::size_t nl =
        buf_off_ + static_cast<std::size_t>(static_cast<const char*>(hit) - buf_.data());
    if (opts_.frame == framing::lines) {
      delim_from_ = nl + 1;
      return nl + 1;
    }
    // Event streams: the line ending is followed by an empty line ("\n" or "\r\n").
    if (nl + 1 >= end) {
      delim_from_ = nl;
      return kNone;
    }
    if (byte_at(nl + 1) == '\n') {
      delim_from_ = nl + 2;
      return nl + 2;
    }
    if (byte_at(nl + 1) == '\r') {
      if (nl + 2 >= end) {
        delim_from_ = nl;
        return kNone;
      }
      if (byte_at(nl + 2) == '\n') {
        delim_from_ = nl + 3;
        return nl + 3;
      }
    }
    p = nl + 1;
  }
  delim_from_ = end;
  return kNone;
}

}  // namespace airlock::filters::redaction
