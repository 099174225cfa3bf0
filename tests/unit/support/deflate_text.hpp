#pragma once
// Test helper: `text` compressed in one go with zlib's deflate, as an origin or a shell tool
// would send it. window_bits (zlib.h, deflateInit2): 15 + 16 for gzip (`gzip -c`), 15 for zlib
// (RFC 1950), -15 for raw deflate (RFC 1951).
#include <zlib.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace airlock::test {

inline std::string deflate_text(std::string_view text, int window_bits = 15 + 16) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  return out;
}

}  // namespace airlock::test
