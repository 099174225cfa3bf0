#include "filters/redaction/response_body.hpp"

#include "core/str_cat.hpp"

namespace airlock::filters::redaction {

namespace {
constexpr std::size_t decode_step = 64 * 1024;
}

response_plan plan_response(std::string_view content_type, std::string_view content_encoding) {
  response_plan plan;
  plan.media = classify_content_type(content_type);
  if (plan.media.kind == body_kind::binary) {
    plan.treatment = body_treatment::pass;
    return plan;
  }
  if (plan.media.kind == body_kind::unsupported) {
    plan.treatment = body_treatment::refuse;
    plan.why = "a text charset the redactors cannot read";
    return plan;
  }
  plan.coding = parse_content_encoding(content_encoding);
  if (plan.coding == content_coding::unsupported) {
    plan.treatment = body_treatment::refuse;
    plan.why = core::str_cat("Content-Encoding ", content_encoding.substr(0, 40));
  }
  return plan;
}

response_body::response_body(std::shared_ptr<const engine> e, const response_plan& plan,
                             std::uint64_t max_bytes, std::string marker)
    : stream_(std::move(e), stream_options{plan.media.frame, 0}),
      flush_each_(plan.media.frame != framing::none),
      max_bytes_(max_bytes),
      marker_(std::move(marker)) {
  if (plan.treatment == body_treatment::pass) {
    guard_ = true;
    return;
  }
  if (plan.coding == content_coding::gzip || plan.coding == content_coding::deflate) {
    decoder_.emplace(plan.coding);
    encoder_.emplace(plan.coding);
  }
}

response_body::~response_body() = default;

void response_body::emit(std::string& text, std::string& out, bool flush) {
  if (!encoder_) {
    if (out.empty())
      out.swap(text);
    else
      out += text;
    text.clear();
    return;
  }
  if (!text.empty()) encoder_->write(text, out);
  text.clear();
  if (flush) encoder_->flush(out);
}

void response_body::take_text(std::string_view text, std::string& out) {
  if (cut_off_) return;
  if (decoded_ + text.size() > max_bytes_) {
    text = text.substr(0, static_cast<std::size_t>(max_bytes_ - decoded_));
    cut_off_ = true;
  }
  decoded_ += text.size();
  stream_.write(text, redacted_);
  emit(redacted_, out, flush_each_ && !redacted_.empty());
}

bool response_body::write(std::string_view piece, std::string& out) {
  if (error_) return false;
  if (guard_) {
    stream_.write(piece, redacted_);
    return guarded(out);
  }
  if (!decoder_) {
    take_text(piece, out);
    return true;
  }
  while (!cut_off_) {
    text_.clear();
    const auto st = decoder_->decode(piece, text_, decode_step);
    take_text(text_, out);
    if (st == decoder::status::error) {
      error_ = decoder_->error();
      return false;
    }
    if (st != decoder::status::output_full) break;
  }
  return true;
}

bool response_body::guarded(std::string& out) {
  if (stream_.redactions() > 0) {
    error_ = "a secret in a body that is not redacted (binary content)";
    redacted_.clear();
    return false;
  }
  emit(redacted_, out, false);
  return true;
}

bool response_body::finish(std::string& out) {
  if (error_) return false;
  if (guard_) {
    stream_.finish(redacted_);
    return guarded(out);
  }
  if (decoder_ && !cut_off_ && !decoder_->complete()) {
    error_ = "compressed body ends early";
    return false;
  }
  stream_.finish(redacted_);
  if (cut_off_) redacted_ += marker_;
  emit(redacted_, out, false);
  if (encoder_) encoder_->finish(out);
  return true;
}

}  // namespace airlock::filters::redaction
