// Response redaction, streamed (src/filters/redaction/stream.*): the body arrives in pieces
// the origin chooses. Differential properties (the stream's contract, tests/unit/filters/
// redaction_stream_test.cpp):
//   - framing none: the concatenated output of write()/finish() over random split points
//     equals engine::redact() of the whole body;
//   - events and lines: the output over random split points equals the output of the same
//     stream fed the body in one write();
//   - the bytes held back never exceed retention_bound();
//   - the prefilter only decides where RE2 runs: the engine without it (every pattern in the
//     RE2::Set) redacts the same bytes the same way;
//   - events and lines: the event guard (event_guard.hpp) on the redacted output gives the
//     same verdict over random split points as in one write; what it lets through is a prefix
//     of its input (all of it when it does not cut), and (events) no field's text joined
//     across the events it let through holds a literal secret, as written or percent- and
//     HTML-reference-decoded;
//   - the escape guard (escape_guard.hpp) on the redacted output: the same verdict whatever
//     the split, a prefix of its input let through, all of it unchanged when it passes.
// The engine is the full built-in library plus two literal secrets, with the smallest overlap
// so that inputs of a few KiB exercise the hold-back logic (the proxy uses 8 KiB).
//
// Input: byte 0 picks framing and min_scan, bytes 1..8 seed the split points, the rest is the
// body.

#include "filters/redaction/builtin.hpp"
#include "filters/redaction/engine.hpp"
#include "filters/redaction/escape_guard.hpp"
#include "filters/redaction/event_guard.hpp"
#include "filters/redaction/event_text.hpp"
#include "filters/redaction/field_escapes.hpp"
#include "filters/redaction/stream.hpp"
#include "fuzz_input.hpp"

#include <memory>
#include <string>

namespace airlock::fuzz {
namespace {

using namespace filters::redaction;

constexpr std::string_view kSecrets[] = {"sk-live-0123456789abcdefXYZ", "hunter2hunter2"};

std::shared_ptr<const engine> build_engine(bool prefilter) {
  engine_options o;
  o.overlap = 256;
  o.prefilter = prefilter;
  auto built =
      engine::build(all_builtin_redactors(),
                    {{"api", std::string(kSecrets[0])}, {"short", std::string(kSecrets[1])}}, o);
  if (!built.errors.empty()) fail("engine does not build");
  return built.compiled;
}

const std::shared_ptr<const engine>& small_engine() {
  static const std::shared_ptr<const engine> e = build_engine(true);
  return e;
}

const std::shared_ptr<const engine>& unfiltered_engine() {
  static const std::shared_ptr<const engine> e = build_engine(false);
  return e;
}

std::string run(std::string_view body, const std::vector<std::size_t>& cuts, stream_options opts) {
  stream s(small_engine(), opts);
  std::string out;
  std::size_t prev = 0;
  for (std::size_t cut : cuts) {
    s.write(body.substr(prev, cut - prev), out);
    if (s.retained() > s.retention_bound()) fail("stream holds back more than its bound");
    prev = cut;
  }
  s.finish(out);
  if (s.bytes_in() != body.size()) fail("bytes_in is not the body's size");
  return out;
}

bool guard(std::string_view redacted, const std::vector<std::size_t>& cuts, framing frame,
           std::string& out) {
  event_guard g(*small_engine(), frame);
  std::size_t prev = 0;
  for (std::size_t cut : cuts) {
    if (!g.write(redacted.substr(prev, cut - prev), out)) return false;
    prev = cut;
  }
  return g.finish(out);
}

bool escapes(std::string_view redacted, const std::vector<std::size_t>& cuts, std::string& out) {
  escape_guard g(*small_engine());
  std::size_t prev = 0;
  for (std::size_t cut : cuts) {
    if (!g.write(redacted.substr(prev, cut - prev), out)) return false;
    prev = cut;
  }
  g.finish(out);
  return true;
}

void check_escape_guard(std::string_view redacted, const std::vector<std::size_t>& cuts) {
  std::string split, whole;
  const bool passed = escapes(redacted, cuts, split);
  if (passed != escapes(redacted, {redacted.size()}, whole))
    fail("the escape guard's verdict depends on how the body was split");
  if (!redacted.starts_with(split)) fail("the escape guard let through what it did not get");
  if (passed && split != redacted) fail("the escape guard passed the body changed");
}

void check_event_guard(std::string_view redacted, const std::vector<std::size_t>& cuts,
                       framing frame) {
  std::string split, whole;
  const bool passed = guard(redacted, cuts, frame, split);
  if (passed != guard(redacted, {redacted.size()}, frame, whole))
    fail("the event guard's verdict depends on how the body was split");
  if (!redacted.starts_with(split)) fail("the event guard let through what it did not get");
  if (passed && split != redacted) fail("the event guard passed the body changed");
  if (frame != framing::events) return;
  const auto texts = event_stream_texts(split);
  // (Past kMaxEventStreams, event_stream_texts joins the rest into the last: no oracle.)
  if (texts.size() >= kMaxEventStreams) return;
  std::string decoded, tail;
  for (const auto& text : texts) {
    decode_field_escapes("", text, decoded, tail);
    for (auto secret : kSecrets) {
      if (text.find(secret) != std::string::npos) fail("a secret joined across events got out");
      if (decoded.find(secret) != std::string::npos)
        fail("a secret joined across events and decoded got out");
    }
  }
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
  stream_options opts;
  opts.frame = config % 3 == 0 ? framing::none : config % 3 == 1 ? framing::events : framing::lines;
  opts.min_scan = (config >> 2) % 4 == 0 ? 0 : 1 + (config >> 4);

  const std::string split = run(in, split_points(in.size(), seed), opts);
  const std::string expected =
      opts.frame == framing::none ? small_engine()->redact(in) : run(in, {in.size()}, opts);
  if (split != expected) fail("streamed output differs from the one-shot output");
  if (opts.frame == framing::none && unfiltered_engine()->redact(in) != expected)
    fail("the prefilter changed what is redacted");
  if (opts.frame != framing::none)
    check_event_guard(expected, split_points(expected.size(), ~seed), opts.frame);
  check_escape_guard(expected, split_points(expected.size(), seed ^ 0x5bd1e995));
  return 0;
}
