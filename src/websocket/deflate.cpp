#include "websocket/deflate.hpp"

#include "core/ascii.hpp"

#include <zlib.h>

#include <cstring>

namespace airlock::websocket {
namespace {

using core::trim_ows;

// Splits `s` at `sep` (no quoting: RFC 7692's parameters are tokens or small integers).
template <class F>
void each_part(std::string_view s, char sep, F&& f) {
  for (;;) {
    const auto at = s.find(sep);
    f(trim_ows(s.substr(0, at)));
    if (at == std::string_view::npos) return;
    s.remove_prefix(at + 1);
  }
}

bool window_bits(std::string_view v, int& out) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  if (v.empty() || v.size() > 2) return false;
  int n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  // RFC 7692 section 7.1.2: 8 to 15.
  if (n < 8 || n > 15) return false;
  out = n;
  return true;
}

}  // namespace

negotiation negotiated(std::string_view header) {
  negotiation out;
  header = trim_ows(header);
  if (header.empty()) return out;
  each_part(header, ',', [&](std::string_view ext) {
    if (!out.ok) return;
    deflate_params p;
    bool first = true;
    each_part(ext, ';', [&](std::string_view param) {
      if (!out.ok) return;
      const auto eq = param.find('=');
      const std::string name = core::lower(trim_ows(param.substr(0, eq)));
      const std::string_view value =
          eq == std::string_view::npos ? std::string_view{} : trim_ows(param.substr(eq + 1));
      if (first) {
        first = false;
        // A second extension, or another one: frames the relay cannot read.
        if (name != "permessage-deflate" || out.deflate) out.ok = false;
        return;
      }
      if (name == "server_no_context_takeover" && value.empty())
        p.server_no_context_takeover = true;
      else if (name == "client_no_context_takeover" && value.empty())
        p.client_no_context_takeover = true;
      else if (name == "server_max_window_bits")
        out.ok = window_bits(value, p.server_max_window_bits);
      else if (name == "client_max_window_bits")
        out.ok = window_bits(value, p.client_max_window_bits);
      else
        out.ok = false;
    });
    if (out.ok) out.deflate = p;
  });
  if (!out.ok) out.deflate.reset();
  return out;
}

std::string deflate_offers(std::string_view header) {
  std::string out;
  each_part(header, ',', [&](std::string_view ext) {
    const auto name = core::lower(trim_ows(ext.substr(0, ext.find(';'))));
    if (name != "permessage-deflate") return;
    if (!out.empty()) out += ", ";
    out += ext;
  });
  return out;
}

struct inflater::state {
  z_stream z{};
  bool ready = false;
};

inflater::inflater() : s_(std::make_unique<state>()) {
  // Raw deflate (negative window bits, RFC 7692 section 7.2.2), the largest window: it reads
  // whatever window the sender chose.
  s_->ready = inflateInit2(&s_->z, -15) == Z_OK;
}

inflater::~inflater() {
  if (s_->ready) inflateEnd(&s_->z);
}

inflater::result inflater::inflate(std::string_view message, std::uint64_t limit,
                                   std::string& out) {
  out.clear();
  if (!s_->ready) return result::corrupt;
  // RFC 7692 section 7.2.2: the sender removed the 0x00 0x00 0xff 0xff tail of a sync flush.
  static constexpr unsigned char tail[4] = {0x00, 0x00, 0xff, 0xff};
  auto& z = s_->z;
  char chunk[16 * 1024];
  for (int part = 0; part < 2; ++part) {
    const std::string_view in =
        part == 0 ? message : std::string_view(reinterpret_cast<const char*>(tail), 4);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    // Bounded: each round either consumes input or produces output, and output is capped.
    while (z.avail_in > 0 || part == 1) {
      z.next_out = reinterpret_cast<Bytef*>(chunk);
      z.avail_out = sizeof chunk;
      const int rc = ::inflate(&z, Z_SYNC_FLUSH);
      const std::size_t produced = sizeof chunk - z.avail_out;
      if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) return result::corrupt;
      if (out.size() + produced > limit) return result::too_big;
      out.append(chunk, produced);
      if (rc == Z_STREAM_END) {
        // A final block (BFINAL): the sender ends its stream; the next message starts anew.
        inflateReset(&z);
        if (z.avail_in > 0 && part == 0) return result::corrupt;
        break;
      }
      if (produced == 0 && (rc == Z_BUF_ERROR || z.avail_in == 0)) break;
    }
  }
  return result::ok;
}

}  // namespace airlock::websocket
