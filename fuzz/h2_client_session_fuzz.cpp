// The HTTP/2 client codec (src/h2/client_session.*) fed raw origin bytes, in the pieces a socket
// might deliver them, with a driver that has a few requests in flight (one with a body and
// trailers), takes response bodies as they come and gives their window back, and opens a new
// stream whenever it may. nghttp2 itself is fuzzed upstream; this is our use of it: the
// callbacks, the stream map, 1xx and trailer heads, the limits. Properties: no crash or leak
// under ASan, output never grows without bound, a failed session says why.

#include "fuzz_input.hpp"
#include "h2/client_session.hpp"

#include <memory>
#include <string>
#include <vector>

namespace airlock::fuzz {
namespace {

struct driving_observer : h2::client_observer {
  h2::client_session* session = nullptr;
  std::vector<std::shared_ptr<h2::client_stream>> streams;
  void on_activity(h2::client_stream&) override {}
  void on_connection() override {}
  // Outside the callbacks, as the proxy's driver does.
  void drive() {
    for (auto& st : streams) {
      if (st->closed) continue;
      session->consume(*st, st->body.size());
      st->body.clear();
    }
    if (streams.size() < 16 && session->can_open()) {
      auto st = session->submit_request(
          {{":method", "POST"}, {":scheme", "https"}, {":authority", "o.test"}, {":path", "/p"}},
          true);
      if (st) {
        st->out = "request";
        st->out_end = true;
        st->out_trailers = {{"x-t", "1"}};
        session->resume(*st);
        streams.push_back(std::move(st));
      }
    }
  }
};

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  fuzz::driving_observer o;
  h2::client_limits l;
  l.max_header_list_bytes = 4096;
  l.max_streams = 8;
  h2::client_session s(l, o);
  o.session = &s;
  o.drive();
  std::string out;
  s.fill_output(out, 1 << 20);  // the preface and our SETTINGS
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  while (at < in.size()) {
    const std::size_t piece = std::min<std::size_t>(in.size() - at, 1 + (in[at] & 0x3f) * 7);
    const bool ok = s.recv({in.data() + at, piece});
    at += piece;
    o.drive();
    out.clear();
    s.fill_output(out, 1 << 20);
    if (out.size() > (1 << 21)) fuzz::fail("output grew past its bound");
    if (!ok) {
      if (s.error().empty()) fuzz::fail("a failed session does not say why");
      break;
    }
  }
  return 0;
}
