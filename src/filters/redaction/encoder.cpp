#include "filters/redaction/encoder.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace airlock::filters::redaction {

struct encoder::state {
  z_stream zs{};
  bool ok = false;
  bool finished = false;
  ~state() {
    if (ok) deflateEnd(&zs);
  }
};

encoder::encoder(content_coding c, int level) : s_(std::make_unique<state>()) {
  if (c != content_coding::gzip && c != content_coding::deflate) return;
  // windowBits 15 + 16 writes a gzip header and trailer; 15 alone writes the zlib wrapper.
  const int bits = c == content_coding::gzip ? MAX_WBITS + 16 : MAX_WBITS;
  s_->ok = deflateInit2(&s_->zs, std::clamp(level, 0, 9), Z_DEFLATED, bits, 8,
                        Z_DEFAULT_STRATEGY) == Z_OK;
}

encoder::~encoder() = default;

bool encoder::ok() const noexcept {
  return s_->ok;
}

void encoder::run(std::string_view in, int mode, std::string& out) {
  state& s = *s_;
  if (!s.ok || s.finished) return;
  constexpr std::size_t kStep = 16 * 1024;
  while (true) {
    const std::size_t piece = std::min<std::size_t>(in.size(), UINT_MAX / 2);
    s.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    s.zs.avail_in = static_cast<uInt>(piece);
    const std::size_t base = out.size();
    out.resize(base + kStep);
    s.zs.next_out = reinterpret_cast<Bytef*>(out.data() + base);
    s.zs.avail_out = static_cast<uInt>(kStep);
    const bool last_piece = piece == in.size();
    const int rc = deflate(&s.zs, last_piece ? mode : Z_NO_FLUSH);
    out.resize(base + (kStep - s.zs.avail_out));
    in.remove_prefix(piece - s.zs.avail_in);
    if (rc == Z_STREAM_ERROR) {
      s.ok = false;
      return;
    }
    if (rc == Z_STREAM_END) {
      s.finished = true;
      return;
    }
    // Done when the input is used up and deflate left room in the output (so it had nothing
    // more to write for this flush mode).
    if (in.empty() && s.zs.avail_out != 0 && mode != Z_FINISH) return;
  }
}

void encoder::write(std::string_view in, std::string& out) {
  if (!in.empty()) run(in, Z_NO_FLUSH, out);
}

void encoder::flush(std::string& out) {
  run({}, Z_SYNC_FLUSH, out);
}

void encoder::finish(std::string& out) {
  run({}, Z_FINISH, out);
}

}  // namespace airlock::filters::redaction
