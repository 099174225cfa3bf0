#include "filters/dlp/response_reading.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "filters/dlp/decode.hpp"
#include "filters/dlp/injection.hpp"
#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/content_type.hpp"
#include "filters/redaction/head_fields.hpp"

#include <algorithm>

namespace airlock::filters::dlp {
namespace {

using policy::model::response_action;
namespace http = boost::beast::http;

// Records `cls` at `location` under `action` once per exchange.
void record_once(exchange& ex, std::string_view cls, std::string_view location,
                 std::string_view action) {
  const bool seen = std::any_of(ex.record.dlp.begin(), ex.record.dlp.end(), [&](const auto& r) {
    return r.cls == cls && r.location == location;
  });
  if (!seen) ex.record.dlp.push_back({cls, location, action});
}

}  // namespace

void response_reading::ask_readable(exchange& ex) const {
  // Read more cheaply without a content coding (one that comes anyway is decoded for reading,
  // or withheld under block when the proxy cannot read it).
  ex.request->set(http::field::accept_encoding, "identity");
  redaction::ask_for_whole_representation(*ex.request);
  // gRPC's messages compressed inside the body (grpc-encoding) are inflated for reading; a
  // server that heeds this spares the work.
  const auto type = redaction::sole_content_type(*ex.request);
  if (type && redaction::classify_content_type(*type).grpc) {
    ex.request->set("grpc-accept-encoding", "identity");
    ex.request->set("connect-accept-encoding", "identity");
  }
}

verdict response_reading::on_response_head(exchange& ex) {
  auto& res = *ex.response;
  // A trailers-only gRPC answer (an error, most often) has its status in the head.
  if (res.find("grpc-status") != res.end())
    if (auto v = on_grpc_status(ex, res); !v.passes()) return v;
  if (!ex.response_has_body) return verdict::next();
  // Text as redaction tells it (an untyped body is text); several Content-Type lines or a
  // charset it cannot read make the body unreadable, like a coding it cannot decode.
  const auto type = redaction::sole_content_type(res);
  const auto media = type ? redaction::classify_content_type(*type)
                          : redaction::body_class{redaction::body_kind::unsupported};
  const auto kind = media.kind;
  if (kind == redaction::body_kind::binary) return read_messages(ex, type.value_or(""));
  const response_action action = config_.responses;
  const auto coding = kind == redaction::body_kind::unsupported
                          ? redaction::content_coding::unsupported
                          : redaction::parse_content_encoding(res);
  if (coding == redaction::content_coding::unsupported) {
    // Nothing the proxy can read. Under block it is withheld (fail closed), and the marker
    // that replaces it is plain text; otherwise it passes, recorded as unread.
    if (action != response_action::block) {
      ex.record.dlp.push_back({kUnreadableCoding, "response", "report"});
      return verdict::next();
    }
    // The marker line that will replace it is UTF-8 plain text.
    res.erase(http::field::content_encoding);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
  }
  text_.emplace(action, config_.max_body_bytes, coding, media.frame == redaction::framing::events);
  res.erase(http::field::content_length);  // a withheld or annotated body changes length
  ex.response_reframed = true;
  return verdict::next();
}

// gRPC and protobuf answers: their messages read as they come. A finding cannot be rewritten
// in a message: `block` refuses the answer, anything else records it.
verdict response_reading::read_messages(exchange& ex, std::string_view type) {
  const auto& res = *ex.response;
  // (A grpc-encoding the proxy cannot inflate makes only a message with the compressed flag
  // unreadable: the head names the coding whether or not any message uses it.)
  messages_ = grpc_response_scan::for_type(type, config_.max_body_bytes,
                                           redaction::grpc_message_coding(res));
  if (!messages_) return verdict::next();
  // A content coding on the whole (ask_readable asked for identity): not read.
  if (redaction::parse_content_encoding(res) != redaction::content_coding::identity) {
    messages_.reset();
    return message_finding(ex, kUnreadableCoding, "response");
  }
  return verdict::next();
}

// A message cannot be annotated: under annotate a finding is recorded as what was done, report.
verdict response_reading::message_finding(exchange& ex, std::string_view cls,
                                          std::string_view location) {
  const bool block = config_.responses == response_action::block;
  record_once(ex, cls, location, block ? "block" : "report");
  if (!block) return verdict::next();
  if (location == "trailer")
    return verdict::violation(
        core::errc::injection_blocked,
        core::str_cat("dlp: prompt injection (", cls, ") in the answer's gRPC status"));
  if (location == "message")
    return verdict::violation(core::errc::injection_blocked,
                              core::str_cat("dlp: prompt injection (", cls, ") in a message"));
  if (cls == kUnreadableCoding)
    return verdict::violation(core::errc::injection_blocked,
                              "dlp: unreadable-coding (gRPC or protobuf messages compressed in a "
                              "coding DLP cannot read, or past dlp.max_body_bytes)");
  return verdict::violation(
      core::errc::injection_blocked,
      core::str_cat("dlp: prompt injection (", cls, ") in a gRPC or protobuf message"));
}

verdict response_reading::on_response_body(exchange& ex, body_chunk& chunk) {
  if (messages_) {
    const auto found = messages_->write(chunk.data, chunk.last, *chunk.out);
    return found ? message_finding(ex, *found, "response") : verdict::next();
  }
  const bool judged = text_->found().has_value();
  text_->write(chunk.data, chunk.last, *chunk.out, chunk.enough);
  if (!judged && text_->found())
    ex.record.dlp.push_back({text_->found()->cls, "response", text_->found()->action});
  return verdict::next();
}

// The origin's text messages joined (after the last kCarry bytes of the ones before: a phrase
// streamed in small deltas), a close's reason (text too) alone. A message cannot be withheld
// behind a marker: `block` refuses it, report and annotate record the finding.
verdict response_reading::on_origin_message(exchange& ex, const message& m) {
  const bool close = m.opcode == 8;
  if (!(m.text() || close)) return verdict::next();
  const auto found = find_injection(close ? m.payload : origin_carry_.add(m.payload));
  if (!close) origin_carry_.trim();
  return found ? message_finding(ex, *found, "message") : verdict::next();
}

// gRPC's status message (grpc-message, percent-encoded: PROTOCOL-HTTP2.md), which a client
// shows as the call's error, and the other trailing metadata, as they are: in the trailers or,
// for a trailers-only answer, in the head.
verdict response_reading::on_grpc_status(exchange& ex, const http::fields& fields) {
  const auto type = redaction::sole_content_type(*ex.response);
  if (!type || !redaction::classify_content_type(*type).grpc) return verdict::next();
  for (const auto& f : fields) {
    auto found = find_injection(f.value());
    if (!found && core::iequals(f.name_string(), "grpc-message"))
      found = find_injection(percent_decode(f.value(), false));
    if (found) return message_finding(ex, *found, "trailer");
  }
  return verdict::next();
}

}  // namespace airlock::filters::dlp
