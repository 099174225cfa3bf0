// The HTTP/2 codec (src/h2/server_session.*) fed raw client bytes, in the pieces a socket might
// deliver them, with a driver that answers every request at once (a body and trailers), takes
// request bodies as they come and gives their window back. nghttp2 itself is fuzzed upstream;
// this is our use of it: the callbacks, the stream map, the limits, the answers. Properties:
// no crash or leak under ASan, output never grows without bound, and a failed session says why.

#include "fuzz_input.hpp"
#include "h2/server_session.hpp"

#include <memory>
#include <string>
#include <vector>

namespace airlock::fuzz {
namespace {

struct answering_observer : h2::observer {
  h2::server_session* session = nullptr;
  std::vector<std::shared_ptr<h2::stream>> streams;
  void on_request(const std::shared_ptr<h2::stream>& st) override { streams.push_back(st); }
  void on_activity(h2::stream&) override {}
  // Outside the callbacks, as the proxy's driver does.
  void serve() {
    for (auto& st : streams) {
      if (st->closed) continue;
      session->consume(*st, st->body.size());
      st->body.clear();
      if (!st->responded) {
        session->submit_response(*st, st->oversized_head ? 431 : 200, {{"x-a", "b"}}, true);
        st->out = "answer";
        st->out_end = true;
        st->out_trailers = {{"grpc-status", "0"}};
        session->resume(*st);
      }
    }
  }
};

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock;
  static const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  fuzz::answering_observer o;
  h2::limits l;
  l.max_header_list_bytes = 4096;
  l.max_concurrent_streams = 8;
  h2::server_session s(l, o);
  o.session = &s;
  // Most inputs start past the preface, so nghttp2 gets to the frames.
  std::string in = preface;
  in.append(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  std::string out;
  while (at < in.size()) {
    const std::size_t piece = std::min<std::size_t>(in.size() - at, 1 + (in[at] & 0x3f) * 7);
    const bool ok = s.recv({in.data() + at, piece});
    at += piece;
    o.serve();
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
