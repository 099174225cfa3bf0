#include "filters/dlp/grpc_response_scan.hpp"

#include "core/ascii.hpp"
#include "filters/dlp/injection.hpp"
#include "filters/dlp/protobuf_view.hpp"
#include "filters/dlp/response_scan.hpp"
#include "filters/redaction/decoder.hpp"
#include "filters/redaction/event_text.hpp"
#include "filters/redaction/grpc_payloads.hpp"

#include <vector>

namespace airlock::filters::dlp {
namespace {

using redaction::kGrpcPrefixBytes;

// The flag byte of a message's prefix: bit 0 compressed (gRPC, gRPC-Web, Connect), bit 1
// Connect's end-of-stream message (JSON, whatever the codec), bit 7 gRPC-Web's trailers (header
// lines, not a message).
constexpr unsigned char kCompressed = 0x01;
constexpr unsigned char kConnectEnd = 0x02;
constexpr unsigned char kWebTrailers = 0x80;

// Where the strings of paths past kMaxPaths are joined: no path either codec writes.
constexpr std::string_view kOverflowPath = "\x7f";

// A message this large stays a scratch buffer's capacity no longer than it is needed.
constexpr std::size_t kKeptRoom = 64 * 1024;

template <typename Map>
typename Map::mapped_type& bounded_slot(Map& m, std::string_view path, std::size_t most) {
  if (auto it = m.find(path); it != m.end()) return it->second;
  if (m.size() + 1 >= most) path = kOverflowPath;
  return m.try_emplace(std::string(path)).first->second;
}

}  // namespace

std::optional<grpc_response_scan> grpc_response_scan::for_type(
    std::string_view content_type, std::uint64_t max_message,
    redaction::content_coding compressed) {
  const auto body = protobuf_body_of(content_type);
  if (body == protobuf_body::none) return std::nullopt;
  if (body == protobuf_body::message)
    return grpc_response_scan(framing::unframed, codec::protobuf, max_message, compressed);
  const auto media = core::trim_ows(content_type.substr(0, content_type.find(';')));
  constexpr std::string_view json = "+json";  // grpc+json, grpc-web+json, connect+json
  const bool is_json =
      media.size() > json.size() && core::iequals(media.substr(media.size() - json.size()), json);
  return grpc_response_scan(framing::grpc, is_json ? codec::json : codec::protobuf, max_message,
                            compressed);
}

std::optional<std::string_view> grpc_response_scan::write(std::string_view piece, bool last,
                                                          std::string& out) {
  std::optional<std::string_view> found;
  while (!unread_ && !piece.empty()) {
    const auto f = take(piece, out);
    if (f && !found) found = f;
  }
  if (!unread_ && last && !frame_.empty()) {
    // The unframed body, whole; or a message the answer cut short, read as it is.
    const auto f = framing_ == framing::unframed ? read(frame_, 0) : find_injection(frame_);
    if (f && !found) found = f;
  }
  if (unread_ || last) {
    out.append(frame_);
    frame_.clear();
    out.append(piece);
  }
  if (frame_.empty() && frame_.capacity() > kKeptRoom) frame_ = std::string();
  return found;
}

// Takes bytes of `piece` into the message being received; a whole one is read and appended to
// `out`. Sets unread_ on a message that cannot be read (and leaves the piece's rest untaken).
std::optional<std::string_view> grpc_response_scan::take(std::string_view& piece,
                                                         std::string& out) {
  if (skip_ > 0) {  // the unread rest of a message over the bound
    const std::size_t n = std::min<std::uint64_t>(skip_, piece.size());
    out.append(piece.substr(0, n));
    piece.remove_prefix(n);
    skip_ -= n;
    return std::nullopt;
  }
  if (framing_ == framing::unframed) {
    const std::size_t n = std::min<std::uint64_t>(max_ - frame_.size(), piece.size());
    frame_.append(piece.substr(0, n));
    piece.remove_prefix(n);
    if (piece.empty()) return std::nullopt;
    // Over the bound: its first max_ bytes read as they are, as a text body's are; the rest
    // passes as it comes.
    unread_ = true;
    return find_injection(frame_);
  }
  if (frame_.size() < kGrpcPrefixBytes) {
    const std::size_t n = std::min(kGrpcPrefixBytes - frame_.size(), piece.size());
    frame_.append(piece.substr(0, n));
    piece.remove_prefix(n);
    if (frame_.size() < kGrpcPrefixBytes) return std::nullopt;
    need_ = redaction::grpc_message_length(frame_);
    if ((frame_[0] & kCompressed) != 0 && (need_ > max_ || !inflatable())) {
      unread_ = true;
      return kUnreadableCoding;
    }
  }
  // A message over the bound is held to it only.
  const std::uint64_t held = std::min(need_, max_);
  const std::size_t n =
      std::min<std::uint64_t>(held - (frame_.size() - kGrpcPrefixBytes), piece.size());
  frame_.append(piece.substr(0, n));
  piece.remove_prefix(n);
  if (frame_.size() - kGrpcPrefixBytes < held) return std::nullopt;
  if (held < need_) {
    // Its first max_ bytes read as they are (its fields cannot be parsed from a part), the
    // rest passed unread; the messages after it are read again.
    const auto found = find_injection(std::string_view(frame_).substr(kGrpcPrefixBytes));
    out.append(frame_);
    frame_.clear();
    skip_ = need_ - held;
    return found;
  }
  const std::string_view message = std::string_view(frame_).substr(kGrpcPrefixBytes);
  const auto flags = static_cast<unsigned char>(frame_[0]);
  const auto found =
      (flags & kCompressed) != 0 ? read_compressed(message, flags) : read(message, flags);
  out.append(frame_);
  frame_.clear();
  return found;
}

bool grpc_response_scan::inflatable() const noexcept {
  return compressed_ == redaction::content_coding::gzip ||
         compressed_ == redaction::content_coding::deflate;
}

// A message with the compressed flag, inflated and read; one that inflates past max_ bytes is
// read to there, as they are, as an uncompressed one over the bound is. A coding that cannot be
// read, or data that does not inflate whole, leave the rest unread.
std::optional<std::string_view> grpc_response_scan::read_compressed(std::string_view message,
                                                                    unsigned char flags) {
  redaction::decoder inflater(compressed_);
  std::string text;
  for (;;) {
    const auto st = inflater.decode(message, text, max_ - text.size());
    if (st == redaction::decoder::status::output_full && text.size() < max_) continue;
    if (st == redaction::decoder::status::output_full) return find_injection(text);
    if (st == redaction::decoder::status::error || !inflater.complete()) {
      unread_ = true;
      return kUnreadableCoding;
    }
    return read(text, flags);
  }
}

// One whole message: its bytes, then its strings joined with the same paths' before them.
std::optional<std::string_view> grpc_response_scan::read(std::string_view message,
                                                         unsigned char flags) {
  auto found = find_injection(message);
  if ((flags & kWebTrailers) != 0) return found;  // header lines: read as they are
  texts_.clear();
  if (codec_ == codec::json || (flags & kConnectEnd) != 0) {
    redaction::for_each_event_string(
        message, [&](std::string_view path, std::string_view, std::string_view,
                     std::string_view text) { bounded_slot(texts_, path, kMaxPaths) += text; });
  } else {
    std::vector<protobuf_text> strings;
    protobuf_texts(message, strings);  // none when it is not protobuf: its bytes were read
    for (const auto& s : strings)
      bounded_slot(texts_, s.path, kMaxPaths) += s.text;
  }
  // Every path joined, whatever was found already: the joins must hold this message's text
  // for the ones after it (report goes on reading).
  for (const auto& [path, text] : texts_) {
    const auto cls = read_joined(path, text);
    if (cls && !found) found = cls;
  }
  return found;
}

std::optional<std::string_view> grpc_response_scan::read_joined(std::string_view path,
                                                                std::string_view text) {
  auto& window = bounded_slot(joined_, path, kMaxPaths);
  const auto cls = find_injection(window.add(text));
  window.trim();
  return cls;
}

}  // namespace airlock::filters::dlp
