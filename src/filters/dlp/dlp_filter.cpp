#include "filters/dlp/dlp_filter.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "filters/decision/decision_filter.hpp"
#include "filters/dlp/carry.hpp"
#include "filters/dlp/coded_body.hpp"
#include "filters/dlp/head_places.hpp"
#include "filters/dlp/protobuf_view.hpp"
#include "filters/dlp/record_scrub.hpp"
#include "filters/dlp/response_reading.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/content_type.hpp"
#include "filters/redaction/head_fields.hpp"
#include "filters/redaction/secret_automaton.hpp"
#include "net/data_like_host.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <deque>
#include <optional>

namespace airlock::filters::dlp {
namespace {

using policy::model::dlp_action;
using policy::model::dlp_config;
using policy::model::response_action;
namespace http = boost::beast::http;

std::string_view action_name(dlp_action a) {
  switch (a) {
    case dlp_action::block:
      return "block";
    case dlp_action::redact:
      return "redact";
    default:
      return "report";
  }
}

// `redact` rewrites only a body held whole; a finding anywhere else is blocked (fail closed).
dlp_action outside_whole_body(dlp_action a) {
  return a == dlp_action::redact ? dlp_action::block : a;
}

class dlp_filter final : public filter {
 public:
  explicit dlp_filter(const dlp_plan& plan) : plan_(plan) {}

  verdict on_request_head(exchange& ex) override {
    // The rule is known now (the decision filter ran); the filter was made before it.
    rule_ = plan_for(ex);
    if (rule_ != nullptr) {
      // A literal secret longer than the short carry is still read whole past the budget.
      const std::size_t longest = rule_->scan->engine().secret_starts().longest();
      for (auto* w : {&window_, &client_carry_, &proto_carry_})
        w->reach(longest);
      if (rule_->config->responses != response_action::off) responses_.emplace(*rule_->config);
    }
    const auto& host = ex.target.host;
    if (blocklisted(plan_.blocklist, host.text))
      return verdict::violation(core::errc::host_blocklisted,
                                core::str_cat("host ", host.text, " is on the blocklist"));
    if (rule_ == nullptr) return verdict::next();
    const dlp_config& cfg = *rule_->config;
    if (cfg.hostnames && !host.is_ip() && !named_exactly(ex)) {
      if (auto why = net::data_like_host(host.text)) {
        const dlp_action action = outside_whole_body(cfg.action);
        ex.record.dlp.push_back({"data-like-hostname", "host", action_name(action)});
        ex.record.host = redacted_host(host.text);
        if (action == dlp_action::block)
          return verdict::violation(core::errc::hostname_exfiltration,
                                    core::str_cat("dlp: ", *why, " in the host name"));
      }
    }
    findings found;
    const scanner& s = *rule_->scan;
    // Every place of the head at once (scan_all): one first look for all of them.
    const head_places places = places_of(ex);
    s.scan_all(places.pieces, found);
    if (!places.query.empty()) s.scan_query(places.query, found);
    if (auto v = read_coding(ex); !v.passes()) return v;
    if (!places.nonce.empty()) {
      // Random by design, so never a high-entropy finding; but 24 characters can still spell
      // a key, or the base64 of a short secret.
      findings in_nonce;
      s.scan(places.nonce, scanner::kind::header, "header", in_nonce);
      for (const auto& f : in_nonce)
        if (f.cls != kHighEntropy) add_finding(found, f.cls, f.location);
    }
    redact_record(ex, found);
    scrubbed_.head_read = true;
    return act(ex, found, outside_whole_body(rule_->config->action));
  }

  // Whichever filter refused, and whether or not on_request_head ran (a refusal before DLP
  // stops it): the record and the refusal's answer repeat nothing the applicable scanner finds
  // (record_scrub.hpp).
  void scrub_record(exchange& ex) override {
    const dlp_plan::rule_plan* plan = rule_ != nullptr ? rule_ : plan_for(ex);
    if (plan != nullptr) dlp::scrub_record(*plan->scan, ex.record, scrubbed_);
  }

  body_use request_body_use(const exchange& ex) const override {
    if (rule_ == nullptr || !ex.has_body) return body_use::none;
    const auto limit = rule_->config->max_body_bytes;
    return ex.content_length && *ex.content_length <= limit ? body_use::whole : body_use::observe;
  }

  verdict on_request_body(exchange& ex, std::string_view piece, bool last) override {
    findings found;
    const dlp_action action = rule_->config->action;
    if (proto_) {
      // Besides the bytes as sent (below), each field of each message laid out on its own
      // (protobuf_view.hpp); a finding there cannot be rewritten in place: redact blocks it.
      // And their top-level fields joined, message after message, after the carry of the
      // ones before: a key sent in two messages of a stream is read whole.
      std::string view, joined;
      if (auto error = proto_->add(piece, last, view, joined)) return unreadable(ex, *error);
      rule_->scan->scan(view, scanner::kind::body, "body", found);
      if (!joined.empty()) {
        rule_->scan->scan(proto_carry_.add(joined), scanner::kind::body, "body", found);
        proto_carry_.trim();
      }
      if (auto v = act(ex, found, outside_whole_body(action)); !v.passes()) return v;
      found.clear();
    }
    if (coded_) {  // coded_body.hpp: inflated and as sent
      const auto gave_up = coded_->read(piece, last, found);
      if (auto v = act(ex, found, outside_whole_body(action)); !v.passes()) return v;
      return gave_up ? unreadable(ex, *gave_up) : verdict::next();
    }
    if (request_body_use(ex) == body_use::whole) {
      rule_->scan->scan(piece, scanner::kind::body, "body", found);
      if (action == dlp_action::redact && !found.empty()) return redact_body(ex, piece, found);
      return act(ex, found, action);
    }
    // Streamed: every piece is read before it goes on (the codec sends it only when this
    // passes), after the carry of the ones before it (carry.hpp: the last kCarry bytes, within
    // a scanning budget), so a secret split between pieces is seen whole. Only that carry is
    // kept: memory stays bounded however long the body.
    rule_->scan->scan(window_.add(piece, last), scanner::kind::body, "body", found);
    window_.trim();
    return act(ex, found, outside_whole_body(action));
  }

  // Request trailers (HTTP/2; an HTTP/1.1 client's are dropped) are read as header fields are,
  // names (also upper-cased) and values: a refusal ends the stream before they are sent on. A
  // gRPC answer's trailers are read for prompt injection (response_reading.hpp).
  verdict on_trailers(exchange& ex, http::fields& fields, bool response) override {
    if (response) return responses_ ? responses_->on_grpc_status(ex, fields) : verdict::next();
    if (rule_ == nullptr) return verdict::next();
    findings found;
    std::vector<scanner::piece> pieces;
    std::deque<std::string> readings;
    for (const auto& field : fields) {
      pieces.push_back({field.name_string(), scanner::kind::header, "trailer"});
      if (auto up = core::upper(field.name_string()); up != field.name_string())
        pieces.push_back({readings.emplace_back(std::move(up)), scanner::kind::header, "trailer"});
      pieces.push_back({field.value(), scanner::kind::header, "trailer"});
    }
    rule_->scan->scan_all(pieces, found);
    return act(ex, found, outside_whole_body(rule_->config->action));
  }

  // WebSocket messages: the agent's are scanned as a body is (secrets, sensitive data); the
  // origin's text messages, with `responses` set, are judged for prompt injection. A message
  // cannot be withheld behind a marker as a response body can: `block` refuses it (the
  // connection closes 1008), report and annotate record the finding. Each is read after the
  // last kCarry bytes of the ones before it in its direction, as a streamed body's windows
  // are, so that a secret or an instruction sent in pieces (a stream of small deltas) is seen
  // whole; what the carried part held was acted on already, and is recorded once.
  verdict on_message(exchange& ex, const message& m) override {
    if (rule_ == nullptr) return verdict::next();
    if (m.from == message_from::client) {
      // Each message alone too: joined, a key in a message of its own after one that ends in
      // a letter would not stand alone. Control frames (a close's reason, a ping's payload)
      // are read alone only: in the join they would split a key sent across data messages.
      findings found;
      rule_->scan->scan(m.payload, scanner::kind::body, "message", found);
      if (m.data()) {
        rule_->scan->scan(client_carry_.add(m.payload), scanner::kind::body, "message", found);
        client_carry_.trim();
      }
      return act(ex, found, outside_whole_body(rule_->config->action));  // never rewritten
    }
    return responses_ ? responses_->on_origin_message(ex, m) : verdict::next();
  }

 private:
  // --- responses: read for prompt injection (response_reading.hpp) ---

  verdict on_forward(exchange& ex) override {
    if (responses_) responses_->ask_readable(ex);
    return verdict::next();
  }
  verdict on_response_head(exchange& ex) override {
    return responses_ ? responses_->on_response_head(ex) : verdict::next();
  }
  body_use response_body_use(const exchange&) const override {
    return responses_ && responses_->transforms() ? body_use::transform : body_use::none;
  }
  verdict on_response_body(exchange& ex, body_chunk& chunk) override {
    return responses_->on_response_body(ex, chunk);
  }

  // A request body in a content coding is read decoded, as the origin will read it: gzip and
  // deflate are inflated (redaction's bounded decoder) and read in pieces with a carry, as a
  // streamed body is, before each coded piece goes on. A coding DLP cannot read (br, zstd,
  // stacked codings), and gRPC messages compressed with a grpc-encoding, are refused under
  // block (recorded as unreadable-coding otherwise). A coded body is never rewritten: redact
  // blocks it.
  verdict read_coding(exchange& ex) {
    if (!ex.has_body || ex.connect) return verdict::next();
    const auto coding = redaction::parse_content_encoding(*ex.request);  // every line
    // A charset the scanner cannot read (UTF-16 and UTF-32 it reads without their NUL bytes,
    // EBCDIC, UTF-7 and the escape-based ones not), or two Content-Type lines.
    const auto type = redaction::sole_content_type(*ex.request);
    if (!type) return unreadable(ex, "several Content-Type fields");
    if (redaction::classify_content_type(*type).kind == redaction::body_kind::unsupported &&
        !redaction::utf16_or_32_charset(*type))
      return unreadable(ex, "a text charset DLP cannot read");
    // Whatever the Content-Type says: a gRPC server decompresses by grpc-encoding alone (some
    // take application/octet-stream or no type at all), so a label must not open a way past.
    const bool grpc_coded = redaction::grpc_compressed(*ex.request);
    if (coding == redaction::content_coding::unsupported || grpc_coded)
      return unreadable(ex, grpc_coded ? "gRPC messages compressed (grpc-encoding or "
                                         "connect-content-encoding)"
                                       : "a request body in a content coding DLP cannot read");
    if (coding != redaction::content_coding::identity)
      coded_.emplace(*rule_->scan, coding);
    else if (const auto proto = protobuf_body_of(*type); proto != protobuf_body::none)
      proto_.emplace(proto, rule_->config->max_body_bytes);
    return verdict::next();
  }

  verdict unreadable(exchange& ex, std::string_view what) {
    const dlp_action action = outside_whole_body(rule_->config->action);
    const auto& dlp = ex.record.dlp;
    if (std::none_of(dlp.begin(), dlp.end(), [](const auto& r) {
          return r.cls == kUnreadableCoding && r.location == "body";
        }))
      ex.record.dlp.push_back({kUnreadableCoding, "body", action_name(action)});
    if (action != dlp_action::block) return verdict::next();
    return verdict::violation(core::errc::dlp_blocked,
                              core::str_cat("dlp: ", kUnreadableCoding, " (", what, ")"));
  }

  // The allowance for hosts a rule names exactly: the operator chose that name.
  bool named_exactly(const exchange& ex) const {
    if (ex.rule == nullptr || ex.rule->source == nullptr) return false;
    const auto& hosts = ex.rule->source->hosts;
    return std::any_of(hosts.begin(), hosts.end(),
                       [&](const std::string& h) { return core::iequals(h, ex.target.host.text); });
  }

  // The audit record keeps the path and the host, never the query: what DLP found there must
  // not reach the log. Path segments that hold a finding are replaced; labels left of the
  // registrable part likewise.
  void redact_record(exchange& ex, const findings& found) const {
    const auto in = [&](std::string_view where) {
      return std::any_of(found.begin(), found.end(),
                         [&](const finding& f) { return f.location == where; });
    };
    if (in("host")) ex.record.host = redacted_host(ex.target.host.text);
    if (in("method")) ex.record.method = kRedacted;
    if (in("path")) ex.record.path = redact_segments(*rule_->scan, ex.path);
  }

  // The configuration that applies to `ex`: its rule's (its own `dlp`, else the policy-wide
  // one); for a request no rule allows, an access request (its host and reason are shown to an
  // operator) and a request refused before a rule was found for it, the policy-wide one; for
  // one the decision refused under a rule that names its host, that rule's. Null: none.
  const dlp_plan::rule_plan* plan_for(const exchange& ex) const {
    const policy::compiled_rule* rule = ex.rule != nullptr ? ex.rule : ex.refused_under;
    const dlp_plan::rule_plan* p = nullptr;
    if (rule == nullptr || rule == &decision::unmatched_rule() || ex.proxy_endpoint)
      p = &plan_.unmatched;
    else if (rule->index < plan_.rules.size())
      p = &plan_.rules[rule->index];
    return p != nullptr && p->config != nullptr ? p : nullptr;
  }

  // `redact` on a body held whole: each secret the rule's redactors match is replaced by
  // "[REDACTED:class]" and the body forwarded so; read again, what is still found (a secret
  // only visible decoded: base64, hex, split) cannot be rewritten in place and is blocked.
  verdict redact_body(exchange& ex, std::string_view body, const findings& found) {
    std::string rewritten = rule_->scan->engine().redact(body);
    findings left;
    rule_->scan->scan(rewritten, scanner::kind::body, "body", left);
    if (!left.empty()) return act(ex, found, dlp_action::block);
    act(ex, found, dlp_action::redact);
    ex.rewritten_body = std::move(rewritten);
    return verdict::next();
  }

  verdict act(exchange& ex, const findings& found, dlp_action action) {
    if (found.empty()) return verdict::next();
    std::string detail = "dlp:";
    for (const auto& f : found) {
      const bool seen = std::any_of(ex.record.dlp.begin(), ex.record.dlp.end(), [&](const auto& r) {
        return r.cls == f.cls && r.location == f.location;
      });
      if (!seen) ex.record.dlp.push_back({f.cls, f.location, action_name(action)});
      if (detail.size() < 200) detail += core::str_cat(" ", f.cls, " in ", f.location, ";");
    }
    detail.pop_back();
    if (action == dlp_action::block) return verdict::violation(core::errc::dlp_blocked, detail);
    return verdict::next();
  }

  const dlp_plan& plan_;
  const dlp_plan::rule_plan* rule_ = nullptr;
  record_scrub_state scrubbed_;  // what of the record was read for secrets already
  scan_window window_;
  scan_window client_carry_;                   // WebSocket messages from the agent
  std::optional<response_reading> responses_;  // with `responses` set
  std::optional<coded_body> coded_;            // a request body in gzip or deflate
  std::optional<protobuf_reader> proto_;       // a gRPC or protobuf request body
  scan_window proto_carry_;                    // its messages' fields, joined
};

}  // namespace

filter* dlp_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  (void)ex;
  if (!plan_->any_rule && plan_->blocklist.empty()) return nullptr;
  return make<dlp_filter>(arena, *plan_);
}

}  // namespace airlock::filters::dlp
