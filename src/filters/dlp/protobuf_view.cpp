#include "filters/dlp/protobuf_view.hpp"

#include "filters/redaction/content_type.hpp"
#include "filters/redaction/grpc_payloads.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::filters::dlp {
namespace {

// A base-128 varint (at most 10 bytes); nullopt when it runs past the end or is too long.
std::optional<std::uint64_t> varint(std::string_view d, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 70 && at < d.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(d[at++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  return std::nullopt;
}

// The next field of `message` from `at`: its number and, for a length-delimited one, its
// bytes (other wire types have none worth reading). False when the message is not well formed.
struct wire_field {
  std::uint64_t number = 0;
  bool delimited = false;
  std::string_view payload;
};
bool next_field(std::string_view message, std::size_t& at, wire_field& f) {
  const auto key = varint(message, at);
  if (!key || (*key >> 3) == 0 || (*key >> 3) > 0x1fffffff) return false;
  f = {*key >> 3, false, {}};
  switch (*key & 7) {
    case 0:  // varint
      return varint(message, at).has_value();
    case 1:  // fixed64
      if (message.size() - at < 8) return false;
      at += 8;
      return true;
    case 5:  // fixed32
      if (message.size() - at < 4) return false;
      at += 4;
      return true;
    case 3:  // start group, end group: deprecated, nothing of their own to read
    case 4:
      return true;
    case 2: {  // length-delimited: a string, bytes, a message or packed numbers
      const auto length = varint(message, at);
      if (!length || *length > message.size() - at) return false;
      f.delimited = true;
      f.payload = message.substr(at, *length);
      at += *length;
      return true;
    }
    default:
      return false;
  }
}

// Text as a reader shows it: no control byte but tab, line feed and carriage return.
bool reads_as_text(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b >= 0x20 ? b != 0x7f : b == '\t' || b == '\n' || b == '\r';
  });
}

bool texts_at(std::string_view message, std::string& path, int depth,
              std::vector<protobuf_text>& out) {
  const std::size_t start = out.size();
  const std::size_t path_size = path.size();
  wire_field f;
  for (std::size_t at = 0; at < message.size();) {
    if (!next_field(message, at, f)) {
      out.resize(start);
      path.resize(path_size);
      return false;
    }
    if (!f.delimited || f.payload.empty()) continue;
    if (path_size > 0) path += '.';
    path += std::to_string(f.number);
    const bool nested = depth + 1 < kProtobufDepth && texts_at(f.payload, path, depth + 1, out);
    if (!nested || reads_as_text(f.payload)) out.push_back({path, f.payload});
    path.resize(path_size);
  }
  return true;
}

}  // namespace

bool protobuf_texts(std::string_view message, std::vector<protobuf_text>& out) {
  std::string path;
  return texts_at(message, path, 0, out);
}

bool protobuf_strings(std::string_view message, std::string& out, int depth, std::string* joined) {
  const std::size_t start = out.size();
  const std::size_t joined_start = joined != nullptr ? joined->size() : 0;
  wire_field f;
  for (std::size_t at = 0; at < message.size();) {
    if (!next_field(message, at, f)) {
      out.resize(start);
      if (joined != nullptr) joined->resize(joined_start);
      return false;
    }
    if (!f.delimited) continue;
    out += '\n';
    out += f.payload;
    out += '\n';
    if (joined != nullptr) joined->append(f.payload);
    if (depth + 1 < kProtobufDepth) protobuf_strings(f.payload, out, depth + 1);
  }
  return true;
}

protobuf_body protobuf_body_of(std::string_view content_type) {
  // application/grpc, application/grpc+proto, application/grpc-web(+proto) (the same framing).
  if (redaction::classify_content_type(content_type).grpc) return protobuf_body::grpc;
  const std::string type =
      core::lower(core::trim_ows(content_type.substr(0, content_type.find(';'))));
  // (application/proto: the Connect protocol's unary calls.)
  if (type == "application/x-protobuf" || type == "application/protobuf" ||
      type == "application/proto" || type == "application/vnd.google.protobuf" ||
      type == "application/x-google-protobuf")
    return protobuf_body::message;
  return protobuf_body::none;
}

std::optional<std::string> grpc_messages::add(std::string_view piece,
                                              std::vector<std::string>& whole) {
  if (failed_) return std::nullopt;  // said once
  while (!piece.empty()) {
    if (!in_message_) {
      using redaction::kGrpcPrefixBytes;
      const std::size_t take = std::min<std::size_t>(kGrpcPrefixBytes - head_.size(), piece.size());
      head_.append(piece.substr(0, take));
      piece.remove_prefix(take);
      if (head_.size() < kGrpcPrefixBytes) break;
      const auto flag = static_cast<unsigned char>(head_[0]);
      need_ = redaction::grpc_message_length(head_);
      head_.clear();
      // gRPC-Web's trailers frame (0x80) is the server's; a client's would be nonsense, but
      // its bytes are read as any message's.
      if ((flag & 1) != 0) {
        failed_ = true;
        return std::string("a gRPC message with the compressed flag");
      }
      if (need_ > max_) {
        failed_ = true;
        return core::str_cat("a gRPC message of ", need_, " bytes, over dlp.max_body_bytes");
      }
      in_message_ = true;
      message_.clear();
    }
    const std::size_t take = std::min<std::uint64_t>(need_ - message_.size(), piece.size());
    message_.append(piece.substr(0, take));
    piece.remove_prefix(take);
    if (message_.size() == need_) {
      whole.push_back(std::move(message_));
      message_.clear();
      in_message_ = false;
    }
  }
  return std::nullopt;
}

std::optional<std::string> protobuf_reader::add(std::string_view piece, bool last,
                                                std::string& view, std::string& joined) {
  const auto lay_out = [&](std::string_view message) {
    view += '\n';
    view += message;
    view += '\n';
    protobuf_strings(message, view, 0, &joined);
  };
  if (kind_ == protobuf_body::message) {
    if (body_.size() + piece.size() > max_)
      return core::str_cat("a protobuf body over dlp.max_body_bytes (", max_, " bytes)");
    body_.append(piece);
    if (last) lay_out(body_);
    return std::nullopt;
  }
  whole_.clear();
  if (auto error = grpc_.add(piece, whole_)) return error;
  for (const auto& m : whole_)
    lay_out(m);
  return std::nullopt;
}

}  // namespace airlock::filters::dlp
