#include "filters/redaction/response_body.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"

#include <algorithm>
#include <cstdint>

namespace airlock::filters::redaction {

namespace {
constexpr std::size_t decode_step = 64 * 1024;
}

namespace {
// Names a coding in a refusal only when it is one of the registered ones: the value is the
// origin's and could carry anything, a secret included.
std::string_view coding_name(std::string_view value) {
  static constexpr std::string_view kKnown[] = {"br",  "zstd", "compress", "x-compress",
                                                "dcb", "dcz",  "exi",      "pack200-gzip"};
  for (std::string_view k : kKnown)
    if (core::iequals(core::trim_ows(value), k)) return k;
  return "an unknown or stacked coding";
}
}  // namespace

response_plan plan_response(const boost::beast::http::fields& head) {
  response_plan plan;
  const auto content_type = sole_content_type(head);
  if (!content_type) {
    plan.treatment = body_treatment::refuse;
    plan.why = "several Content-Type fields";
    return plan;
  }
  plan.media = classify_content_type(*content_type);
  if (plan.media.kind == body_kind::unsupported) {
    plan.treatment = body_treatment::refuse;
    plan.why = "a text charset the redactors cannot read";
    return plan;
  }
  plan.coding = parse_content_encoding(head);
  if (plan.coding == content_coding::unsupported) {
    // Binary content too: the guard must see the bytes a client decodes.
    plan.treatment = body_treatment::refuse;
    plan.why = core::str_cat("Content-Encoding ",
                             coding_name(head[boost::beast::http::field::content_encoding]));
    return plan;
  }
  plan.treatment =
      plan.media.kind == body_kind::binary ? body_treatment::pass : body_treatment::redact;
  return plan;
}

response_body::response_body(std::shared_ptr<const engine> e, const response_plan& plan,
                             std::uint64_t max_bytes, std::string marker,
                             std::uint64_t response_bytes)
    : stream_(e, stream_options{plan.media.frame, 0}),
      flush_each_(plan.media.frame != framing::none),
      max_bytes_(std::min(max_bytes, response_bytes)),
      marker_(std::move(marker)),
      response_bytes_(response_bytes) {
  guard_ = plan.treatment == body_treatment::pass;
  if (guard_ && plan.media.grpc) grpc_.emplace(e);
  if (!guard_ && plan.media.frame != framing::none) events_.emplace(*e, plan.media.frame);
  if (!guard_) escapes_.emplace(*e);
  // A text body not labelled as an event stream may still be one to its client (the model
  // APIs' SDKs parse the stream whatever its type): its first bytes decide.
  sniffing_ = !guard_ && plan.media.frame == framing::none;
  engine_ = e;
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

bool response_body::take_text(std::string_view text, std::string& out) {
  if (read_enough_) return true;
  // Past the limit, as much again as the stream may hold back is read: a value the cut falls
  // into is then seen whole and redacted before the output is cut at max_bytes. Cut without
  // it, the value's first part would match nothing and go out as it is.
  const std::uint64_t hold_back = stream_.retention_bound();
  const std::uint64_t reading_limit =
      max_bytes_ > UINT64_MAX - hold_back ? UINT64_MAX : max_bytes_ + hold_back;
  if (decoded_ + text.size() >= reading_limit) {
    text = text.substr(0, static_cast<std::size_t>(reading_limit - decoded_));
    read_enough_ = true;
  }
  decoded_ += text.size();
  if (sniffing_) {
    sniff_.append(text.substr(0, kSniffEvents - std::min(sniff_.size(), kSniffEvents)));
    if (sniff_.size() >= kSniffEvents) decide_framing();
  }
  stream_.write(text, redacted_);
  if (sniffing_) {  // undecided: nothing goes on yet
    undecided_ += redacted_;
    redacted_.clear();
    return true;
  }
  release_undecided();
  if (!through_guards(redacted_, false)) return false;
  clamp(redacted_);
  emit(redacted_, out, flush_each_ && !redacted_.empty());
  return true;
}

// WHATWG HTML 9.2.6: an event stream is lines of fields ("data:", "event:", "id:", "retry:")
// and comments (":"), after an optional byte-order mark.
void response_body::decide_framing() {
  sniffing_ = false;
  std::string_view lead = sniff_;
  if (lead.starts_with("\xEF\xBB\xBF")) lead.remove_prefix(3);
  for (std::string_view field : {"data:", "event:", "id:", "retry:", ":"}) {
    if (lead.starts_with(field)) {
      events_.emplace(*engine_, framing::events);
      break;
    }
  }
  std::string().swap(sniff_);
  engine_.reset();
}

void response_body::release_undecided() {
  if (undecided_.empty()) return;
  redacted_.insert(0, undecided_);
  std::string().swap(undecided_);
}

bool response_body::through_guards(std::string& text, bool end) {
  std::string passed;
  if (events_) {
    if (!events_->write(text, passed) || (end && !events_->finish(passed)))
      return refuse_text(events_->why(), text);
    text.swap(passed);
    passed.clear();
  }
  if (!escapes_->write(text, passed)) return refuse_text(escapes_->why(), text);
  if (end) escapes_->finish(passed);
  text.swap(passed);
  return true;
}

bool response_body::refuse_text(const char* why, std::string& text) {
  error_ = why;
  unredactable_ = true;
  text.clear();
  return false;
}

// Redacted text past max_bytes of output is not sent.
void response_body::clamp(std::string& text) {
  const std::uint64_t room = max_bytes_ - std::min(sent_, max_bytes_);
  if (text.size() > room) text.resize(static_cast<std::size_t>(room));
  sent_ += text.size();
}

bool response_body::write(std::string_view piece, std::string& out) {
  if (error_) return false;
  const std::size_t before = out.size();
  if (!decoder_) return take(piece, out) && count_sent(out, before);
  while (!read_enough_) {
    text_.clear();
    const auto st = decoder_->decode(piece, text_, decode_step);
    if (!take(text_, out)) return false;
    if (st == decoder::status::error) {
      error_ = decoder_->error();
      return false;
    }
    if (st != decoder::status::output_full) break;
  }
  return count_sent(out, before);
}

// The cap is checked before each decoded step is looked at, so a decompression bomb stops
// within one step (64 KiB) of it; what the text path reads is bounded by its own cut.
bool response_body::guard_decoded(std::string_view bytes, std::string& out) {
  decoded_ += bytes.size();
  if (decoded_ > response_bytes_)
    return fail_too_large("the decoded body is larger than limits.response_bytes");
  if (!grpc_) {
    stream_.write(bytes, redacted_);
    return guarded(out);
  }
  // Read twice: the bytes as they came (only how many are released counts: in a body that
  // passes they are the bytes themselves), and the payloads joined, which hands them on.
  raw_scratch_.clear();
  stream_.write(bytes, raw_scratch_);
  raw_released_ += raw_scratch_.size();
  grpc_->write(bytes, raw_released_, redacted_);
  return guarded(out);
}

// Encoded again (at level 1, and a cut text with its marker), a body may come out larger than
// it came in: the client never gets more than limits.response_bytes of it, as of any response.
bool response_body::count_sent(std::string& out, std::size_t before) {
  sent_coded_ += out.size() - before;
  if (sent_coded_ <= response_bytes_) return true;
  out.resize(before);
  return fail_too_large("the body encoded again is larger than limits.response_bytes");
}

bool response_body::fail_too_large(const char* why) {
  error_ = why;
  too_large_ = true;
  redacted_.clear();
  return false;
}

// Decoded bytes: guarded (binary) or redacted (text).
bool response_body::take(std::string_view bytes, std::string& out) {
  if (guard_) return guard_decoded(bytes, out);
  if (!looks_like_ascii_text(bytes)) {
    error_ =
        "text in UTF-16 or UTF-32 (a byte-order mark or NUL bytes), which the redactors "
        "cannot read";
    unredactable_ = true;
    return false;
  }
  return take_text(bytes, out);
}

// A text body labelled UTF-8, or not labelled, may still be UTF-16 or UTF-32 to a client that
// sniffs (content_type.hpp): its first kSniffBytes are looked at as they come.
bool response_body::looks_like_ascii_text(std::string_view bytes) {
  if (decoded_ >= kSniffBytes) return true;
  const auto early = bytes.substr(0, static_cast<std::size_t>(kSniffBytes - decoded_));
  if (lead_.size() < 2) lead_.append(early.substr(0, 2 - lead_.size()));
  return !sniffs_as_utf16_or_32(lead_) && early.find('\0') == std::string_view::npos;
}

bool response_body::guarded(std::string& out) {
  if (stream_.redactions() > 0 || (grpc_ && grpc_->found())) {
    error_ = "a secret in a body that is not redacted (binary content)";
    unredactable_ = true;
    redacted_.clear();
    return false;
  }
  emit(redacted_, out, false);
  return true;
}

bool response_body::finish(std::string& out) {
  if (error_) return false;
  const std::size_t before = out.size();
  if (decoder_ && !read_enough_ && !decoder_->complete()) {
    error_ = "compressed body ends early";
    return false;
  }
  // Read to the reading limit, the text did not end there: what the stream still holds may be
  // the first part of a value the cut falls into, and is dropped. Whatever it released was
  // read with its whole context, and covers at least max_bytes of the text.
  if (!read_enough_ && grpc_) {
    raw_scratch_.clear();
    stream_.finish(raw_scratch_);
    grpc_->finish(redacted_);
  } else if (!read_enough_) {
    stream_.finish(redacted_);
  }
  if (sniffing_) decide_framing();  // a body shorter than the sniff
  release_undecided();
  if (guard_) {
    if (!guarded(out)) return false;
  } else {
    // What the stream released at the end goes through the guards, then what they held. Cut
    // at max_bytes, the text did not end: what a guard holds back (the start of a secret) is
    // dropped with the rest.
    if (!through_guards(redacted_, !read_enough_)) return false;
    clamp(redacted_);
    if (cut_off()) redacted_ += marker_;
    emit(redacted_, out, false);
  }
  if (encoder_) encoder_->finish(out);
  return count_sent(out, before);
}

}  // namespace airlock::filters::redaction
