#include "filters/redaction/redaction_filter.hpp"

#include "core/ascii.hpp"
#include "core/log.hpp"
#include "core/str_cat.hpp"
#include "filters/redaction/head_fields.hpp"
#include "filters/redaction/response_body.hpp"
#include "filters/redaction/rule_engines.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <optional>

namespace airlock::filters::redaction {
namespace http = boost::beast::http;
namespace {
using verdict = filters::verdict;

class redaction_filter final : public filter {
 public:
  explicit redaction_filter(const rule_engines& engines) : engines_(engines) {}

  verdict on_forward(exchange& ex) override {
    const auto& rule = *ex.rule;
    engine_ = engines_.for_rule(rule.index);
    guard_ = engines_.for_binary(rule.index);
    // A swapped placeholder's value must not come back either, whatever the rule says.
    if (!engine_ && !ex.placeholders.empty()) engine_ = guard_ = engines_.secrets_only();
    if (engine_) {
      narrow_accept_encoding(*ex.request);
      ask_for_whole_representation(*ex.request);
      // gRPC and Connect's streams compress messages inside the body (grpc-encoding,
      // connect-content-encoding), out of the guard's sight.
      ex.request->set("grpc-accept-encoding", "identity");
      ex.request->set("connect-accept-encoding", "identity");
    }
    return verdict::next();
  }

  verdict on_response_head(exchange& ex) override {
    if (!engine_) return verdict::next();
    auto& res = *ex.response;
    // An upgraded stream cannot be redacted: switching protocols fails closed.
    if (res.result_int() == 101)
      return verdict::fail(core::errc::upstream_error,
                           "origin switched protocols without an allowed upgrade");
    if (auto why = unreadable_head(res)) return refuse(ex, *why);
    const auto plan = plan_response(res);  // before redact_head edits Content-Type
    // The origin's reason phrase is free text (RFC 9112 section 4): the standard one is sent.
    res.reason({});
    redact_head(*engine_, res, header_hits_);
    ex.record.redactions = engine_->named(header_hits_);
    if (!ex.response_has_body) return verdict::next();
    // A decoded body is bounded as the response is: parser limits count only coded bytes.
    response_bytes_ = ex.snapshot->limits().response_bytes;
    switch (plan.treatment) {
      case body_treatment::refuse:
        return refuse(ex, core::str_cat("this one is in ", plan.why));
      case body_treatment::pass:
        if (!guard_) break;
        body_.emplace(guard_, plan, 0, std::string(), response_bytes_);
        // A coded body is decoded to be guarded and encoded again: its length may change.
        if (plan.coding != content_coding::identity) reframe(ex);
        break;
      case body_treatment::redact:
        rule_cuts_ = ex.rule->redact.active && ex.rule->redact.max_bytes < response_bytes_;
        max_bytes_ = rule_cuts_ ? ex.rule->redact.max_bytes : response_bytes_;
        body_.emplace(engine_, plan, max_bytes_,
                      core::str_cat("\n[airlock: response cut off after ", max_bytes_,
                                    " bytes by rule ", ex.rule->name, "]\n"),
                      response_bytes_);
        reframe(ex);  // its length changes
        break;
    }
    return verdict::next();
  }

  body_use response_body_use(const exchange&) const override {
    return body_ ? body_use::transform : body_use::none;
  }

  verdict on_response_body(exchange& ex, body_chunk& chunk) override {
    if (!chunk.data.empty() && !body_->write(chunk.data, *chunk.out)) return cut(ex);
    if (body_->read_enough()) chunk.enough = true;
    if (!chunk.last) return verdict::next();
    if (!body_->finish(*chunk.out)) return cut(ex);
    if (body_->cut_off()) {
      ex.record.detail =
          core::str_cat("response cut off after ", max_bytes_, " bytes of text (",
                        rule_cuts_ ? core::str_cat("rule ", ex.rule->name, " redacts at most that")
                                   : std::string("limits.response_bytes"),
                        ")");
      log(ex);
    }
    return verdict::next();
  }

  // Response trailers are redacted as the head is (gRPC's grpc-message may echo a value).
  // Request trailers are not this filter's.
  verdict on_trailers(exchange& ex, http::fields& fields, bool response) override {
    if (!response || !engine_) return verdict::next();
    redact_head(*engine_, fields, header_hits_);
    if (!body_) ex.record.redactions = engine_->named(header_hits_);
    return verdict::next();
  }

  void on_end(exchange& ex) override {
    if (!body_) return;
    auto hits = body_->redaction().hits();
    hits.resize(std::max(hits.size(), header_hits_.size()));
    for (std::size_t i = 0; i < header_hits_.size(); ++i)
      hits[i] += header_hits_[i];
    ex.record.redactions = engine_->named(hits);
  }

 private:
  // The body cannot be decoded, a guarded one carries a secret, or it decodes (or is encoded
  // again) past limits.response_bytes: the client must not get a whole-looking response.
  verdict cut(exchange& ex) {
    const auto why = body_->too_large()      ? core::errc::response_too_large
                     : body_->unredactable() ? core::errc::unredactable_response
                                             : core::errc::upstream_error;
    auto v = verdict::fail(why, body_->too_large()
                                    ? core::str_cat("response body cut off: ", body_->error(), " (",
                                                    response_bytes_, " bytes)")
                                    : core::str_cat("response body cut off: ", body_->error()));
    ex.record.detail = v.detail;
    log(ex);
    return v;
  }
  // A response the redactors cannot read whole: a part of a representation (only a Range
  // request gets one, and on_forward removed Range) or gRPC messages in a compression.
  static std::optional<std::string> unreadable_head(const http::response_header<>& res) {
    if (res.result() == http::status::partial_content)
      return "origin sent part of a representation (206)";
    if (grpc_compressed(res))
      return "its gRPC messages are compressed (grpc-encoding or connect-content-encoding)";
    return std::nullopt;
  }
  verdict refuse(const exchange& ex, std::string_view why) const {
    return verdict::fail(core::errc::unredactable_response,
                         core::str_cat("rule ", ex.rule->name, " redacts responses; ", why));
  }
  static void reframe(exchange& ex) {
    ex.response->erase(http::field::content_length);
    ex.response_reframed = true;
  }
  static void log(const exchange& ex) {
    const auto& r = ex.record;
    AIRLOCK_LOG(warn, "proxy", r.agent, ' ', r.method, ' ', r.host, r.path, ": ", r.detail);
  }

  const rule_engines& engines_;
  std::shared_ptr<const engine> engine_;  // null: the response passes as it is
  std::shared_ptr<const engine> guard_;   // literal secrets only, for binary bodies
  std::uint64_t max_bytes_ = 0;           // text: cut off past it, with a marker
  std::uint64_t response_bytes_ = 0;      // limits.response_bytes: decoded or sent past it fails
  bool rule_cuts_ = false;                // max_bytes_ is the rule's redact.max_bytes
  hit_counts header_hits_;
  std::optional<response_body> body_;
};

}  // namespace

filter* redaction_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  if (ex.connect) return nullptr;
  return make<redaction_filter>(arena, *engines_);
}

}  // namespace airlock::filters::redaction
