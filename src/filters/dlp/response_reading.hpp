#pragma once
// The response side of one exchange's DLP (`responses` set: block, annotate or report): what
// the origin answers is read for prompt injection (injection.hpp) before the agent reads it.
//   - a text body (response_scan.hpp): held up to max_body_bytes and judged, then withheld
//     behind a marker line, passed, or annotated;
//   - a gRPC or protobuf answer (grpc_response_scan.hpp): each message held until whole and
//     read, then passed; `block` refuses the answer (injection_blocked: a gRPC call ends with
//     that status), anything else records the finding;
//   - the origin's WebSocket text messages and close reasons, read joined: `block` closes the
//     connection (1008, injection_blocked), anything else records the finding.
// Each finding goes into the record once per class and place.
//
// @par Thread Safety
// One per exchange, one thread.

#include "filters/dlp/carry.hpp"
#include "filters/dlp/grpc_response_scan.hpp"
#include "filters/dlp/response_scan.hpp"
#include "filters/filter.hpp"
#include "policy/dlp.hpp"

#include <optional>

namespace airlock::filters::dlp {

class response_reading {
 public:
  explicit response_reading(const policy::model::dlp_config& config) : config_(config) {}

  // Asks the origin for what can be read: no content coding, no gRPC message compression,
  // the whole representation (an instruction split between two ranges is in neither).
  void ask_readable(exchange& ex) const;
  verdict on_response_head(exchange& ex);
  bool transforms() const noexcept { return text_.has_value() || messages_.has_value(); }
  verdict on_response_body(exchange& ex, body_chunk& chunk);
  verdict on_origin_message(exchange& ex, const message& m);
  // A gRPC answer's trailers, or the head of one that is trailers only (grpc-status there).
  verdict on_grpc_status(exchange& ex, const boost::beast::http::fields& fields);

 private:
  verdict read_messages(exchange& ex, std::string_view type);
  verdict message_finding(exchange& ex, std::string_view cls, std::string_view location);

  const policy::model::dlp_config& config_;
  std::optional<response_scan> text_;           // a text body
  std::optional<grpc_response_scan> messages_;  // a gRPC or protobuf one
  scan_window origin_carry_;                    // WebSocket messages from the origin
};

}  // namespace airlock::filters::dlp
