// DLP's reading of protobuf and gRPC request bodies (src/filters/dlp/protobuf_view.hpp) on any
// bytes: nothing may crash, read out of bounds or recurse without limit, and
// - protobuf_strings leaves its output as it was when it says the input is no message, and
//   lays out at most kProtobufDepth copies of the input plus two newlines per field;
// - grpc_messages hands over the same messages however the body is cut into pieces;
// - redaction's grpc_payloads (the response guard's reading of gRPC bodies) gives the same
//   payload bytes however the body is cut, and the payload released in any other cuts and
//   rejoined with the prefixes is the body again, byte for byte;
// - a field built from the input, the key at its start, is on a line of its own in the layout
//   of a message that carries it, whatever precedes it there;
// - protobuf_texts leaves its output as it was when it says the input is no message, and every
//   text it gives is a part of the input;
// - grpc_response_scan (DLP's reading of gRPC and protobuf answers; JSON or protobuf codec,
//   messages gzip-compressed or not, as the seed says) passes the body on byte for byte however
//   it is cut, and finds the same first thing in it.
//
// Input: 8 bytes seed the split points; the rest is the body.

#include "filters/dlp/grpc_response_scan.hpp"
#include "filters/dlp/protobuf_view.hpp"
#include "filters/redaction/grpc_payloads.hpp"
#include "fuzz_input.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace airlock::fuzz {
namespace {

using filters::dlp::grpc_messages;
using filters::dlp::kProtobufDepth;
using filters::dlp::protobuf_strings;

std::uint64_t seed_of(std::string_view& data) {
  std::uint64_t seed = 0;
  for (int i = 0; i < 8 && !data.empty(); ++i)
    seed = seed << 8 | take_byte(data);
  return seed;
}

void layout_properties(std::string_view body) {
  std::string out = "before";
  const bool message = protobuf_strings(body, out);
  if (!message && out != "before") fail("a failed layout changed its output");
  if (out.size() - 6 > (kProtobufDepth + 1) * (3 * body.size() + 2))
    fail("the layout grew past its bound");
  // The input as the bytes of field 1 (its varint length), then field 6: on a line of its own.
  std::string framed = "\x0a";
  for (std::size_t n = body.size();; n >>= 7) {
    framed += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    if (n <= 0x7f) break;
  }
  framed += body;
  framed += "\x32\x01z";
  std::string laid;
  if (!protobuf_strings(framed, laid)) fail("a well-formed message was not read");
  if (laid.find("\n" + std::string(body) + "\n") == std::string::npos)
    fail("a field was not laid out on its own line");
}

void framing_properties(std::string_view body, std::uint64_t seed) {
  grpc_messages whole_reader(1 << 16), cut_reader(1 << 16);
  std::vector<std::string> whole, cut, got;
  const auto whole_error = whole_reader.add(body, whole);
  std::optional<std::string> cut_error;
  std::size_t at = 0;
  for (std::size_t end : split_points(body.size(), seed)) {
    got.clear();
    auto e = cut_reader.add(body.substr(at, end - at), got);
    cut.insert(cut.end(), got.begin(), got.end());
    if (e && !cut_error) cut_error = e;
    at = end;
  }
  if (whole_error.has_value() != cut_error.has_value()) fail("an error depends on the cuts");
  if (whole != cut) fail("the messages depend on the cuts");
}

void guard_properties(std::string_view body, std::uint64_t seed) {
  filters::redaction::grpc_payloads whole_reader, cut_reader;
  std::string whole, cut;
  whole_reader.split(body, whole);
  std::size_t at = 0;
  for (std::size_t end : split_points(body.size(), seed)) {
    cut_reader.split(body.substr(at, end - at), cut);
    at = end;
  }
  if (whole != cut) fail("the payload depends on the cuts");
  if (cut.size() > body.size()) fail("more payload than body");
  std::string rejoined;
  at = 0;
  for (std::size_t end : split_points(cut.size(), seed * 0x9e3779b97f4a7c15ULL + 1)) {
    cut_reader.rejoin(std::string_view(cut).substr(at, end - at), rejoined);
    at = end;
  }
  cut_reader.finish(rejoined);
  if (rejoined != body) fail("the body rejoined is not the body");
}

void texts_properties(std::string_view body) {
  std::vector<filters::dlp::protobuf_text> texts{{"kept", "kept"}};
  const bool message = filters::dlp::protobuf_texts(body, texts);
  if (!message && texts.size() != 1) fail("a failed reading changed its output");
  for (std::size_t i = 1; i < texts.size(); ++i)
    if (texts[i].text.data() < body.data() ||
        texts[i].text.data() + texts[i].text.size() > body.data() + body.size())
      fail("a text is not a part of the input");
}

void answer_properties(std::string_view body, std::uint64_t seed) {
  using scan = filters::dlp::grpc_response_scan;
  const auto framing = (seed & 1) != 0 ? scan::framing::unframed : scan::framing::grpc;
  const auto codec = (seed & 2) != 0 ? scan::codec::json : scan::codec::protobuf;
  const auto coding = (seed & 4) != 0 ? filters::redaction::content_coding::gzip
                                      : filters::redaction::content_coding::identity;
  scan whole_scan(framing, codec, 1 << 16, coding), cut_scan(framing, codec, 1 << 16, coding);
  std::string whole, cut;
  const auto whole_found = whole_scan.write(body, true, whole);
  std::optional<std::string_view> cut_found;
  std::size_t at = 0;
  const auto points = split_points(body.size(), seed >> 3);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto f = cut_scan.write(body.substr(at, points[i] - at), i + 1 == points.size(), cut);
    if (f && !cut_found) cut_found = f;
    at = points[i];
  }
  if (points.empty()) cut_found = cut_scan.write({}, true, cut);
  if (whole != body || cut != body) fail("the answer did not pass byte for byte");
  if (whole_found != cut_found) fail("what was found depends on the cuts");
}

}  // namespace
}  // namespace airlock::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::uint64_t seed = airlock::fuzz::seed_of(in);
  airlock::fuzz::layout_properties(in);
  airlock::fuzz::framing_properties(in, seed);
  airlock::fuzz::guard_properties(in, seed);
  airlock::fuzz::texts_properties(in);
  airlock::fuzz::answer_properties(in, seed);
  return 0;
}
