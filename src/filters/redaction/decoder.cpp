#include "filters/redaction/decoder.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace airlock::filters::redaction {
namespace {

// RFC 1950 section 2.2: CM = 8 (deflate), CINFO <= 7, and CMF*256 + FLG a multiple of 31.
bool zlib_header(const unsigned char h[2]) {
  return (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((h[0] << 8) | h[1]) % 31 == 0;
}

}  // namespace

struct decoder::state {
  enum class phase { sniff, inflating, member_end, member_sniff, trailing, failed };

  z_stream zs{};
  content_coding coding;
  phase ph = phase::sniff;
  bool zinit = false;
  bool raw = false;
  bool pending_out = false;  // the last inflate filled the output: it may hold more
  bool complete = false;
  unsigned char head[2] = {0, 0};  // first bytes, held until the format is known
  std::size_t head_len = 0;
  std::size_t head_pos = 0;
  std::uint64_t in_total = 0;
  std::uint64_t out_total = 0;
  std::uint64_t trailing = 0;
  const char* err = nullptr;

  explicit state(content_coding c) : coding(c) {}
  ~state() {
    if (zinit) inflateEnd(&zs);
  }
};

decoder::decoder(content_coding c) : s_(std::make_unique<state>(c)) {
  if (c != content_coding::gzip && c != content_coding::deflate) {
    s_->ph = state::phase::failed;
    s_->err = "unsupported content coding";
  }
}

decoder::~decoder() = default;

decoder::status decoder::decode(std::string_view& in, std::string& out, std::size_t max_out) {
  using phase = state::phase;
  state& s = *s_;
  max_out = std::clamp<std::size_t>(max_out, 1, UINT_MAX / 2);
  const std::size_t base = out.size();
  out.resize(base + max_out);
  std::size_t produced = 0;
  auto finish_with = [&](status st) {
    out.resize(base + produced);
    s.out_total += produced;
    return st;
  };
  auto take = [&](std::size_t n) {
    in.remove_prefix(n);
    s.in_total += n;
  };
  auto fail = [&](const char* why) {
    s.ph = phase::failed;
    s.err = why;
    return finish_with(status::error);
  };

  for (;;) {
    switch (s.ph) {
      case phase::failed:
        return finish_with(status::error);

      case phase::trailing:
        // RFC 1952 section 2.2 allows several members and nothing else; what follows the end
        // is dropped (as gzip(1) does with trailing garbage) and counted.
        s.trailing += in.size();
        take(in.size());
        return finish_with(status::done);

      case phase::member_end:
        if (in.empty()) return finish_with(status::done);
        s.ph = s.raw ? phase::trailing : phase::member_sniff;
        continue;

      case phase::sniff:
      case phase::member_sniff: {
        while (s.head_len < 2 && !in.empty()) {
          s.head[s.head_len++] = static_cast<unsigned char>(in.front());
          take(1);
        }
        if (s.head_len < 2)
          return finish_with(s.ph == phase::sniff ? status::need_input : status::done);
        if (s.ph == phase::sniff) {
          // "deflate" is zlib-wrapped by the spec but raw in some servers (RFC 9110 section
          // 8.4.1.2 notes this); gzip is detected by inflate itself (windowBits + 32).
          s.raw = s.coding == content_coding::deflate && !zlib_header(s.head);
          if (inflateInit2(&s.zs, s.raw ? -MAX_WBITS : MAX_WBITS + 32) != Z_OK)
            return fail("cannot initialise zlib");
          s.zinit = true;
        } else {
          if (s.head[0] != 0x1f || s.head[1] != 0x8b) {  // not another gzip member
            s.trailing += 2;
            s.head_len = 0;
            s.ph = phase::trailing;
            continue;
          }
          if (inflateReset(&s.zs) != Z_OK) return fail("cannot reset zlib");
          s.complete = false;
        }
        s.head_pos = 0;
        s.ph = phase::inflating;
        continue;
      }

      case phase::inflating: {
        if (produced == max_out) return finish_with(status::output_full);
        const bool from_head = s.head_pos < s.head_len;
        const auto* src =
            from_head ? s.head + s.head_pos : reinterpret_cast<const unsigned char*>(in.data());
        const std::size_t avail =
            std::min<std::size_t>(from_head ? s.head_len - s.head_pos : in.size(), UINT_MAX / 2);
        if (avail == 0 && !s.pending_out) return finish_with(status::need_input);
        s.zs.next_in = const_cast<Bytef*>(src);
        s.zs.avail_in = static_cast<uInt>(avail);
        s.zs.next_out = reinterpret_cast<Bytef*>(out.data() + base + produced);
        s.zs.avail_out = static_cast<uInt>(max_out - produced);
        const uInt out_before = s.zs.avail_out;
        const int rc = inflate(&s.zs, Z_NO_FLUSH);
        const std::size_t used = avail - s.zs.avail_in;
        produced += out_before - s.zs.avail_out;
        if (from_head)
          s.head_pos += used;
        else
          take(used);
        s.pending_out = s.zs.avail_out == 0;
        if (rc == Z_STREAM_END) {
          s.complete = true;
          s.pending_out = false;
          s.head_len = s.head_pos = 0;
          s.ph = phase::member_end;
          continue;
        }
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR) {  // no progress possible: needs input or output room
          if (s.zs.avail_out == 0) return finish_with(status::output_full);
          s.pending_out = false;
          if (from_head) continue;
          return finish_with(status::need_input);
        }
        return fail(rc == Z_MEM_ERROR ? "out of memory" : "corrupt compressed data");
      }
    }
  }
}

bool decoder::complete() const noexcept {
  return s_->complete;
}
std::uint64_t decoder::total_in() const noexcept {
  return s_->in_total;
}
std::uint64_t decoder::total_out() const noexcept {
  return s_->out_total;
}
std::uint64_t decoder::trailing_bytes() const noexcept {
  return s_->trailing;
}
const char* decoder::error() const noexcept {
  return s_->err != nullptr ? s_->err : "";
}

}  // namespace airlock::filters::redaction
