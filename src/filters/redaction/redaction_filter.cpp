#include "filters/redaction/redaction_filter.hpp"

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
    // Only a Range request gets a part, and none was sent (on_forward): a part of a value
    // cannot be recognised, so an origin that sends one anyway is refused.
    if (res.result() == http::status::partial_content)
      return verdict::fail(core::errc::unredactable_response,
                           "origin sent part of a representation (206) to a redacting rule");
    redact_head(*engine_, res, header_hits_);
    ex.record.redactions = engine_->named(header_hits_);
    if (!ex.response_has_body) return verdict::next();
    const auto plan =
        plan_response(res[http::field::content_type], res[http::field::content_encoding]);
    const auto& rule = *ex.rule;
    switch (plan.treatment) {
      case body_treatment::refuse:
        return verdict::fail(
            core::errc::unredactable_response,
            core::str_cat("rule ", rule.name, " redacts responses; this one is in ", plan.why));
      case body_treatment::pass:
        if (guard_) body_.emplace(guard_, plan, 0, std::string());
        break;
      case body_treatment::redact:
        max_bytes_ =
            rule.redact.active ? rule.redact.max_bytes : ex.snapshot->limits().response_bytes;
        body_.emplace(engine_, plan, max_bytes_,
                      core::str_cat("\n[airlock: response cut off after ", max_bytes_,
                                    " bytes by rule ", rule.name, "]\n"));
        // Its length changes: the codec re-frames it.
        res.erase(http::field::content_length);
        ex.response_reframed = true;
        break;
    }
    return verdict::next();
  }

  body_use response_body_use(const exchange&) const override {
    return body_ ? body_use::transform : body_use::none;
  }

  verdict on_response_body(exchange& ex, body_chunk& chunk) override {
    if (!chunk.data.empty() && !body_->write(chunk.data, *chunk.out)) return cut(ex);
    if (body_->cut_off()) chunk.enough = true;
    if (!chunk.last) return verdict::next();
    if (!body_->finish(*chunk.out)) return cut(ex);
    if (body_->cut_off()) {
      ex.record.detail =
          core::str_cat("response cut off after ", max_bytes_, " bytes of text (rule ",
                        ex.rule->name, " redacts at most that)");
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
  // The body cannot be decoded, or a guarded one carries a secret: the client must not get a
  // whole-looking response.
  verdict cut(exchange& ex) {
    auto v = verdict::fail(
        body_->guarding() ? core::errc::unredactable_response : core::errc::upstream_error,
        core::str_cat("response body cut off: ", body_->error()));
    ex.record.detail = v.detail;
    log(ex);
    return v;
  }
  static void log(const exchange& ex) {
    const auto& r = ex.record;
    AIRLOCK_LOG(warn, "proxy", r.agent, ' ', r.method, ' ', r.host, r.path, ": ", r.detail);
  }

  const rule_engines& engines_;
  std::shared_ptr<const engine> engine_;  // null: the response passes as it is
  std::shared_ptr<const engine> guard_;   // literal secrets only, for binary bodies
  std::uint64_t max_bytes_ = 0;
  hit_counts header_hits_;
  std::optional<response_body> body_;
};

}  // namespace

filter* redaction_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  if (ex.connect) return nullptr;
  return make<redaction_filter>(arena, *engines_);
}

}  // namespace airlock::filters::redaction
