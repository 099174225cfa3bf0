// The HTTP/1.1 request head and body framing as the proxy reads them from a client: Beast's
// request_parser<buffer_body> with the policy's limits, the proxy's own framing checks, and the
// request target parsers (CONNECT authority, absolute-form URL). Requests are pipelined: each
// one parsed by a fresh parser from where the previous one ended, as the session does.
//
// Properties, beyond "no crash, no UB, no leak":
//   - split invariance: the bytes fed in random pieces give exactly the requests (method,
//     target, body, verdict) that the same bytes fed at once give. A parser whose verdict
//     depends on TCP segmentation would let a smuggler pick what a second reader sees.
//   - a parsed host normalises to itself.
//
// The codec under test sits behind read_requests() (the one function that knows Beast): when
// the proxy's framing moves into its own codec, point read_requests() at it and keep the rest.
//
// Input: byte 0 picks the limits, bytes 1..8 seed the split points, the rest is the stream.

#include "core/ascii.hpp"
#include "fuzz_input.hpp"
#include "net/host.hpp"
#include "net/http_framing.hpp"
#include "policy/model.hpp"

#include <boost/beast/http.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace airlock::fuzz {
namespace {

namespace http = boost::beast::http;
namespace asio = boost::asio;

struct limits {
  std::uint64_t header_bytes = 0;
  std::uint64_t body_bytes = 0;
  std::uint32_t header_count = 0;
};

// What one request came to. Compared field by field between the two feeds.
struct request {
  // Empty when the request was read whole. Only whether there is one is compared: which
  // complaint Beast reports first for a broken head can depend on how much of it has arrived
  // ("bad method" at once, "partial message" at the end), and the proxy refuses both alike.
  std::string error;
  std::string method;
  std::string target;
  unsigned version = 0;
  std::string framing;  // the proxy's framing refusal, if any
  std::string body;
  bool keep_alive = false;
  bool operator==(const request& o) const {
    // The body of a request that failed is whatever had arrived: not compared.
    return error.empty() == o.error.empty() && method == o.method && target == o.target &&
           version == o.version && framing == o.framing && (!error.empty() || body == o.body) &&
           keep_alive == o.keep_alive;
  }
};

// ---- The codec under test -----------------------------------------------------------------

// Feeds `stream` to the parser in the pieces `cuts` gives (each cut the end of a piece) and
// returns the requests read, stopping at the first that fails or is refused.
std::vector<request> read_requests(std::string_view stream, const std::vector<std::size_t>& cuts,
                                   const limits& lim) {
  std::vector<request> out;
  std::string pending;  // received, not yet consumed (the session's flat_buffer)
  std::size_t next_cut = 0, received = 0;
  auto receive = [&] {  // the next non-empty piece, or false at the end of the stream
    while (next_cut < cuts.size()) {
      const std::size_t before = pending.size();
      pending.append(stream.substr(received, cuts[next_cut] - received));
      received = cuts[next_cut++];
      if (pending.size() > before) return true;
    }
    return false;
  };
  constexpr int max_requests = 16;
  while (out.size() < max_requests) {
    if (pending.empty() && !receive()) break;  // clean end between requests
    request r;
    http::request_parser<http::buffer_body> p;
    p.header_limit(static_cast<std::uint32_t>(lim.header_bytes));
    p.body_limit(boost::none);  // checked by hand once the head is read, as the session does
    char body_buf[512];
    bool eof = false;
    std::size_t head_bytes = 0;
    for (int steps = 0; !p.is_done(); ++steps) {
      if (steps > 1'000'000) fail("parser makes no progress");
      if (p.is_header_done()) {
        p.get().body().data = body_buf;
        p.get().body().size = sizeof body_buf;
      }
      // As Beast's own read loop does: the parser is never handed an empty buffer (in a chunk
      // body it would answer "no error, nothing consumed" forever); read more first.
      if (!eof && pending.empty() && !receive()) eof = true;
      // Beast 1.81 asserts in parse_chunk_header on a short put() after the last chunk (found
      // by this target): the proxy's codec (h1_body.hpp read_some_body) waits for more by the
      // same rule, checked here. At the end of the stream such bytes are an incomplete message.
      if (p.is_header_done() && net::chunk_put_must_wait(p.chunked(), pending)) {
        if (eof) {
          r.error = "partial message";
          break;
        }
        if (!receive()) eof = true;
        continue;
      }
      boost::system::error_code ec;
      const bool header_was_done = p.is_header_done();
      std::size_t n = 0;
      if (eof) {
        p.put_eof(ec);
      } else {
        n = p.put(asio::buffer(pending.data(), pending.size()), ec);
        pending.erase(0, n);
        if (!header_was_done) head_bytes += n;
      }
      if (header_was_done) r.body.append(body_buf, sizeof body_buf - p.get().body().size);
      if (ec == http::error::need_buffer) continue;
      if (ec == http::error::need_more) {
        if (eof) fail("need_more after eof");
        if (!receive()) eof = true;
        continue;
      }
      if (ec) {
        r.error = ec.message();
        break;
      }
      if (eof) break;
      if (!header_was_done && p.is_header_done()) {
        // Beast 1.81 does not hold a head that arrives in one piece to header_limit: the start
        // line and the fields are each checked against the whole limit (basic_parser.ipp,
        // state::fields), so up to twice the limit gets through, while the same bytes in
        // pieces are refused. The codec must count the head itself (found by this target).
        if (head_bytes > lim.header_bytes) {
          r.error = "header limit exceeded (counted by the codec)";
          break;
        }
        // The head is complete: the checks the session makes before reading any body.
        auto& req = p.get();
        r.method = std::string(req.method_string());
        r.target = std::string(req.target());
        r.version = req.version();
        r.keep_alive = req.keep_alive();
        std::size_t fields = 0;
        for ([[maybe_unused]] const auto& f : req)
          ++fields;
        if (fields > lim.header_count) r.framing = "too many headers";
        if (r.framing.empty()) r.framing = std::string(net::framing_problem(p.get()));
        if (r.framing.empty() && p.content_length().value_or(0) > lim.body_bytes)
          r.framing = "body too large";
        if (!r.framing.empty()) break;
        p.body_limit(lim.body_bytes);
      }
    }
    if (r.error.empty() && !p.is_done() && r.framing.empty()) r.error = "incomplete";
    const bool stop = !r.error.empty() || !r.framing.empty() || !r.keep_alive;
    out.push_back(std::move(r));
    if (stop) break;
  }
  return out;
}

// ---- The request target, as the session reads it ------------------------------------------

void check_host(const net::normalized_host& h) {
  auto again = net::normalize_host(h.text);
  if (!again || again->text != h.text || again->kind != h.kind)
    fail("normalised host does not normalise to itself");
}

void check_target(const request& r) {
  if (!r.error.empty() || !r.framing.empty()) return;
  if (r.method == "CONNECT") {
    if (auto a = net::parse_authority(r.target, 0, true)) {
      if (a->port == 0) fail("CONNECT authority without a port");
      check_host(a->host);
    }
  } else if (!r.target.empty() && r.target.front() != '/') {
    if (auto url = net::parse_http_url(r.target)) {
      check_host(url->target.host);
      if (url->path_and_query.empty() || url->path_and_query.front() != '/')
        fail("origin-form path does not start with '/'");
    }
  }
}

void print(const std::vector<request>& rs, const char* how) {
  std::fprintf(stderr, "%s: %zu requests\n", how, rs.size());
  for (const auto& r : rs)
    std::fprintf(stderr, "  error '%s' framing '%s' method '%s' target '%s' body %zu bytes\n",
                 r.error.c_str(), r.framing.c_str(), r.method.c_str(), r.target.c_str(),
                 r.body.size());
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace airlock::fuzz;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::uint8_t config = take_byte(in);
  std::uint64_t seed = 0;
  for (int i = 0; i < 8; ++i)
    seed = seed << 8 | take_byte(in);

  // The policy's defaults, or small limits that inputs of a few KiB can reach.
  const airlock::policy::model::limits defaults;
  limits lim{defaults.header_bytes, defaults.body_bytes, defaults.header_count};
  if (config & 1) lim.header_bytes = 64 + (config >> 2) * 8;
  if (config & 2) lim.body_bytes = (config >> 2) * 4;
  if (config & 2) lim.header_count = 1 + (config >> 4);

  const auto whole = read_requests(in, {in.size()}, lim);
  const auto split = read_requests(in, split_points(in.size(), seed), lim);
  if (whole != split) {
    print(whole, "one read");
    print(split, "split reads");
    fail("requests differ between one read and split reads");
  }
  for (const auto& r : whole)
    check_target(r);
  return 0;
}
