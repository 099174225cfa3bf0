#include "filters/redaction/grpc_payloads.hpp"

#include <algorithm>

namespace airlock::filters::redaction {

void grpc_payloads::split(std::string_view piece, std::string& payload) {
  while (!piece.empty()) {
    if (left_ > 0) {
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, piece.size()));
      payload.append(piece.substr(0, take));
      payload_in_ += take;
      left_ -= take;
      piece.remove_prefix(take);
      continue;
    }
    // A prefix, perhaps split across pieces: its bytes are kept where it stands.
    const std::size_t take = std::min<std::size_t>(kGrpcPrefixBytes - head_.size(), piece.size());
    if (prefixes_.empty() || prefixes_.back().at != payload_in_)
      prefixes_.push_back({payload_in_, {}});
    prefixes_.back().bytes.append(piece.substr(0, take));
    head_.append(piece.substr(0, take));
    piece.remove_prefix(take);
    if (head_.size() < kGrpcPrefixBytes) break;
    left_ = grpc_message_length(head_);
    head_.clear();
  }
}

void grpc_payloads::emit_prefixes_at(std::uint64_t offset, std::string& out) {
  while (!prefixes_.empty() && prefixes_.front().at == offset) {
    out += prefixes_.front().bytes;
    prefixes_.pop_front();
  }
}

void grpc_payloads::rejoin(std::string_view released, std::string& out) {
  emit_prefixes_at(payload_out_, out);
  while (!released.empty()) {
    const std::uint64_t next = prefixes_.empty() ? UINT64_MAX : prefixes_.front().at;
    const auto take =
        static_cast<std::size_t>(std::min<std::uint64_t>(released.size(), next - payload_out_));
    out.append(released.substr(0, take));
    released.remove_prefix(take);
    payload_out_ += take;
    emit_prefixes_at(payload_out_, out);
  }
}

void grpc_payloads::finish(std::string& out) {
  for (const auto& p : prefixes_)
    out += p.bytes;
  prefixes_.clear();
}

void grpc_reading::write(std::string_view piece, std::uint64_t raw_released, std::string& out) {
  payload_.clear();
  released_.clear();
  payloads_.split(piece, payload_);
  stream_.write(payload_, released_);
  payloads_.rejoin(released_, held_);
  release(raw_released, out);
}

void grpc_reading::finish(std::string& out) {
  released_.clear();
  stream_.finish(released_);
  payloads_.rejoin(released_, held_);
  payloads_.finish(held_);
  release(UINT64_MAX, out);
}

void grpc_reading::release(std::uint64_t up_to, std::string& out) {
  const auto n = static_cast<std::size_t>(
      std::min<std::uint64_t>(held_.size(), up_to - std::min(up_to, sent_)));
  out.append(held_, 0, n);
  held_.erase(0, n);
  sent_ += n;
}

}  // namespace airlock::filters::redaction
