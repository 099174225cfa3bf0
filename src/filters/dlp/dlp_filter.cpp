#include "filters/dlp/dlp_filter.hpp"

#include "core/ascii.hpp"
#include "core/str_cat.hpp"
#include "filters/dlp/carry.hpp"
#include "filters/dlp/coded_body.hpp"
#include "filters/dlp/decode.hpp"
#include "filters/dlp/injection.hpp"
#include "filters/dlp/response_scan.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/redaction/content_coding.hpp"
#include "filters/redaction/content_type.hpp"
#include "filters/redaction/decoder.hpp"
#include "filters/redaction/head_fields.hpp"
#include "filters/redaction/policy_redactors.hpp"
#include "net/data_like_host.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
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

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

// A host name is case-insensitive (RFC 4343) and arrives lower-cased, while a key may be upper
// case only (an AWS key id); and a key may be cut at a dot or a hyphen ("AKIA1234.5678...",
// "x-AKIA..."). Read besides the name as sent: the name upper-cased, and each run of two or more
// of its parts (split at '.' and '-') joined, upper-cased, so that a key spread over labels is
// seen whole and a part glued to it does not hide it. A name has at most 127 labels; the runs
// are bounded by kMaxParts parts (a name with more is refused as chained labels anyway).
std::vector<std::string> host_readings(std::string_view host) {
  constexpr std::size_t kMaxParts = 16;
  std::vector<std::string> out;
  out.push_back(upper(host));
  std::vector<std::string_view> parts;
  for (std::size_t pos = 0; pos <= host.size() && parts.size() < kMaxParts;) {
    const auto end = std::min(host.find_first_of(".-", pos), host.size());
    if (end > pos) parts.push_back(host.substr(pos, end - pos));
    pos = end + 1;
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string run(parts[i]);
    for (std::size_t j = i + 1; j < parts.size(); ++j) {
      run += parts[j];
      out.push_back(upper(run));
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return (x >= 'A' && x <= 'Z' ? x | 0x20 : x) == (y >= 'A' && y <= 'Z' ? y | 0x20 : y);
  });
}

class dlp_filter final : public filter {
 public:
  explicit dlp_filter(const dlp_plan& plan) : plan_(plan) {}

  verdict on_request_head(exchange& ex) override {
    // The rule is known now (the decision filter ran); the filter was made before it.
    if (ex.rule != nullptr && ex.rule->index < plan_.rules.size() &&
        plan_.rules[ex.rule->index].config != nullptr)
      rule_ = &plan_.rules[ex.rule->index];
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
    std::vector<scanner::piece> pieces;
    std::deque<std::string> readings;  // stable: pieces point into them
    std::string_view query, nonce;
    if (!host.is_ip()) {
      pieces.push_back({host.text, scanner::kind::url, "host"});
      for (auto& r : host_readings(host.text))
        pieces.push_back({readings.emplace_back(std::move(r)), scanner::kind::url, "host"});
    }
    if (!ex.connect) {
      pieces.push_back({ex.path, scanner::kind::url, "path"});
      const auto mark = ex.path_and_query.find('?');
      if (mark != std::string::npos) {
        query = std::string_view(ex.path_and_query).substr(mark + 1);
        pieces.push_back({query, scanner::kind::url, "query"});
      }
      // The method is the agent's token when the rule lists no methods (RFC 9110 section 9.1).
      pieces.push_back({ex.request->method_string(), scanner::kind::header, "method"});
      for (const auto& field : *ex.request) {
        const auto name = field.name_string();
        // A field name is the agent's text as much as its value is; and case-insensitive
        // (HTTP/2 sends it in lower case), so it is read upper-cased too.
        pieces.push_back({name, scanner::kind::header, "header-name"});
        if (auto up = upper(name); up != name)
          pieces.push_back(
              {readings.emplace_back(std::move(up)), scanner::kind::header, "header-name"});
        if (iequals(name, "host") || iequals(name, "proxy-authorization") ||
            iequals(name, "proxy-connection"))
          continue;
        if (iequals(name, "sec-websocket-key") && websocket_nonce(ex, field.value())) {
          nonce = field.value();
          continue;
        }
        const bool cookie = iequals(name, "cookie");
        pieces.push_back({field.value(), cookie ? scanner::kind::url : scanner::kind::header,
                          cookie ? "cookie" : "header"});
      }
    }
    s.scan_all(pieces, found);
    if (!query.empty()) s.scan_query(query, found);
    if (auto v = read_coding(ex); !v.passes()) return v;
    if (!nonce.empty()) {
      // Random by design, so never a high-entropy finding; but 24 characters can still spell
      // a key, or the base64 of a short secret.
      findings in_nonce;
      s.scan(nonce, scanner::kind::header, "header", in_nonce);
      for (const auto& f : in_nonce)
        if (f.cls != kHighEntropy) add_finding(found, f.cls, f.location);
    }
    redact_record(ex, found);
    return act(ex, found, outside_whole_body(rule_->config->action));
  }

  body_use request_body_use(const exchange& ex) const override {
    if (rule_ == nullptr || !ex.has_body) return body_use::none;
    const auto limit = rule_->config->max_body_bytes;
    return ex.content_length && *ex.content_length <= limit ? body_use::whole : body_use::observe;
  }

  verdict on_request_body(exchange& ex, std::string_view piece, bool) override {
    findings found;
    const dlp_action action = rule_->config->action;
    if (coded_) {  // coded_body.hpp: inflated and as sent
      const auto gave_up = coded_->read(piece, found);
      if (auto v = act(ex, found, outside_whole_body(action)); !v.passes()) return v;
      return gave_up ? unreadable(ex, *gave_up) : verdict::next();
    }
    if (request_body_use(ex) == body_use::whole) {
      rule_->scan->scan(piece, scanner::kind::body, "body", found);
      if (action == dlp_action::redact && !found.empty()) return redact_body(ex, piece, found);
      return act(ex, found, action);
    }
    // Streamed: every piece is read before it goes on (the codec sends it only when this
    // passes), after the last kCarry bytes of the ones before it, so a secret split between
    // pieces is seen whole. Only that carry is kept: memory stays bounded however long the body.
    window_.append(piece);
    rule_->scan->scan(window_, scanner::kind::body, "body", found);
    keep_tail(window_);
    return act(ex, found, outside_whole_body(action));
  }

  // Request trailers (HTTP/2; an HTTP/1.1 client's are dropped) are read as header fields are,
  // names (also upper-cased) and values: a refusal ends the stream before they are sent on.
  verdict on_trailers(exchange& ex, http::fields& fields, bool response) override {
    if (response || rule_ == nullptr) return verdict::next();
    findings found;
    std::vector<scanner::piece> pieces;
    std::deque<std::string> readings;
    for (const auto& field : fields) {
      pieces.push_back({field.name_string(), scanner::kind::header, "trailer"});
      if (auto up = upper(field.name_string()); up != field.name_string())
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
      findings found;
      client_carry_.append(m.payload);
      rule_->scan->scan(client_carry_, scanner::kind::body, "message", found);
      keep_tail(client_carry_);
      return act(ex, found, outside_whole_body(rule_->config->action));  // never rewritten
    }
    if (!scans_responses() || !m.text()) return verdict::next();
    origin_carry_.append(m.payload);
    const auto found = find_injection(origin_carry_);
    keep_tail(origin_carry_);
    if (!found) return verdict::next();
    const response_action action = rule_->config->responses;
    const std::string_view done = action == response_action::block      ? "block"
                                  : action == response_action::annotate ? "annotate"
                                                                        : "report";
    const bool seen = std::any_of(ex.record.dlp.begin(), ex.record.dlp.end(), [&](const auto& r) {
      return r.cls == *found && r.location == "message";
    });
    if (!seen) ex.record.dlp.push_back({*found, "message", done});
    if (action != response_action::block) return verdict::next();
    return verdict::violation(core::errc::dlp_blocked,
                              core::str_cat("dlp: prompt injection (", *found, ") in a message"));
  }

 private:
  // --- responses: prompt injection in text bodies (response_scan.hpp) ---

  verdict on_forward(exchange& ex) override {
    // Scanned responses are read more cheaply without a content coding (one that comes anyway
    // is decoded for reading, or withheld under block when the proxy cannot read it).
    // And whole: an instruction split between two ranges would not be seen in either.
    if (scans_responses()) {
      ex.request->set(http::field::accept_encoding, "identity");
      redaction::ask_for_whole_representation(*ex.request);
    }
    return verdict::next();
  }

  verdict on_response_head(exchange& ex) override {
    if (!scans_responses() || !ex.response_has_body) return verdict::next();
    auto& res = *ex.response;
    // Text as redaction tells it (an untyped body is text); several Content-Type lines or a
    // charset it cannot read make the body unreadable, like a coding it cannot decode.
    const auto type = redaction::sole_content_type(res);
    const auto media = type ? redaction::classify_content_type(*type)
                            : redaction::body_class{redaction::body_kind::unsupported};
    const auto kind = media.kind;
    if (kind == redaction::body_kind::binary) return verdict::next();
    const response_action action = rule_->config->responses;
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
    scan_.emplace(action, rule_->config->max_body_bytes, coding,
                  media.frame == redaction::framing::events);
    res.erase(http::field::content_length);  // a withheld or annotated body changes length
    ex.response_reframed = true;
    return verdict::next();
  }

  body_use response_body_use(const exchange&) const override {
    return scan_ ? body_use::transform : body_use::none;
  }

  verdict on_response_body(exchange& ex, body_chunk& chunk) override {
    const bool judged = scan_->found().has_value();
    scan_->write(chunk.data, chunk.last, *chunk.out, chunk.enough);
    if (!judged && scan_->found())
      ex.record.dlp.push_back({scan_->found()->cls, "response", scan_->found()->action});
    return verdict::next();
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
    const bool grpc_coded = redaction::grpc_compressed(*ex.request) &&
                            core::lower(type->substr(0, 16)) == "application/grpc";
    if (coding == redaction::content_coding::unsupported || grpc_coded)
      return unreadable(ex, grpc_coded ? "gRPC messages compressed (grpc-encoding)"
                                       : "a request body in a content coding DLP cannot read");
    if (coding != redaction::content_coding::identity) coded_.emplace(*rule_->scan, coding);
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

  // Sec-WebSocket-Key is a random nonce (RFC 6455 section 4.1), high entropy by design: it is
  // spared the high-entropy class only on a WebSocket upgrade the rule allows, and only when it
  // is what the RFC says (the base64 of 16 bytes: 22 characters, the last carrying 2 bits, then
  // "=="). Any other use of the field is read as a header is.
  static bool websocket_nonce(const exchange& ex, std::string_view value) {
    if (ex.upgrade != "websocket" || ex.rule == nullptr || ex.request->method() != http::verb::get)
      return false;
    const auto& allowed = ex.rule->upgrades;
    if (std::find(allowed.begin(), allowed.end(), "websocket") == allowed.end()) return false;
    if (value.size() != 24 || !value.ends_with("==")) return false;
    const auto nonce = base64_decode(value);
    const char end = value[21];  // 128 bits in 22 characters: its low 4 bits are zero
    return nonce && nonce->size() == 16 && (end == 'A' || end == 'Q' || end == 'g' || end == 'w');
  }

  // The allowance for hosts a rule names exactly: the operator chose that name.
  bool named_exactly(const exchange& ex) const {
    if (ex.rule == nullptr || ex.rule->source == nullptr) return false;
    const auto& hosts = ex.rule->source->hosts;
    return std::any_of(hosts.begin(), hosts.end(),
                       [&](const std::string& h) { return iequals(h, ex.target.host.text); });
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
    if (in("method")) ex.record.method = "[REDACTED:dlp]";
    if (!in("path")) return;
    std::string out;
    bool any = false;
    const std::string_view path = ex.path;
    for (std::size_t pos = 0; pos <= path.size();) {
      auto slash = path.find('/', pos);
      if (slash == std::string_view::npos) slash = path.size();
      const auto segment = path.substr(pos, slash - pos);
      findings here;
      if (!segment.empty()) rule_->scan->scan(segment, scanner::kind::url, "path", here);
      any = any || !here.empty();
      out += here.empty() ? segment : std::string_view("[REDACTED:dlp]");
      if (slash < path.size()) out += '/';
      pos = slash + 1;
    }
    ex.record.path = any ? std::move(out) : std::string("[REDACTED:dlp]");
  }

  static std::string redacted_host(std::string_view host) {
    // Keep the last two labels: where it went, without what it carried.
    auto dot = host.rfind('.');
    if (dot != std::string_view::npos && dot > 0) dot = host.rfind('.', dot - 1);
    return dot == std::string_view::npos ? std::string("[REDACTED:dlp]")
                                         : core::str_cat("[REDACTED:dlp]", host.substr(dot));
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

  bool scans_responses() const {
    return rule_ != nullptr && rule_->config->responses != response_action::off;
  }

  const dlp_plan& plan_;
  const dlp_plan::rule_plan* rule_ = nullptr;
  std::string window_;
  std::string client_carry_, origin_carry_;  // WebSocket messages, each direction's tail
  std::optional<response_scan> scan_;        // a text response read for prompt injection
  std::optional<coded_body> coded_;          // a request body in gzip or deflate
};

}  // namespace

bool blocklisted(const std::vector<policy::model::blocked_host>& list, std::string_view host) {
  for (const auto& b : list) {
    if (b.text == host) return true;
    if (b.wildcard &&
        (host == b.suffix || (host.size() > b.suffix.size() && host.ends_with(b.suffix) &&
                              host[host.size() - b.suffix.size() - 1] == '.')))
      return true;
  }
  return false;
}

scanner_config scanner_config_for(const policy::snapshot& snapshot, const dlp_config* cfg) {
  scanner_config out;
  if (cfg != nullptr) {
    out.classes = cfg->classes;
    out.entropy = cfg->entropy;
  }
  for (const auto& r : snapshot.redactors())
    out.custom.push_back(redaction::custom_redactor(r.name, r.pattern, r.replacement));
  out.secrets = redaction::literal_secrets(snapshot);
  for (const auto& s : snapshot.secrets())
    out.placeholders.push_back(s.placeholder);
  return out;
}

dlp_plan::build_result dlp_plan::build(const policy::snapshot& snapshot) {
  build_result out;
  auto plan = std::make_shared<dlp_plan>();
  plan->blocklist = snapshot.model().blocklist;
  const dlp_config& fallback = snapshot.model().dlp;
  std::map<std::string, std::shared_ptr<const scanner>> by_classes;
  for (const auto& rule : snapshot.rules()) {
    const dlp_config* cfg = nullptr;
    if (rule.source != nullptr && rule.source->dlp.present)
      cfg = &rule.source->dlp;
    else if (fallback.present)
      cfg = &fallback;
    if (cfg != nullptr && cfg->off) cfg = nullptr;
    rule_plan rp;
    if (cfg != nullptr) {
      std::string key = cfg->entropy ? "+entropy" : "";
      for (const auto& c : cfg->classes)
        key += core::str_cat(",", c);
      auto& scan = by_classes[key];
      if (!scan) {
        auto built = scanner::build(scanner_config_for(snapshot, cfg));
        for (auto& e : built.errors)
          out.errors.push_back(core::str_cat("rule ", rule.name, ": ", e));
        if (!built.built) continue;
        scan = std::move(built.built);
      }
      rp = {cfg, scan};
      plan->any_rule = true;
    }
    if (plan->rules.size() <= rule.index) plan->rules.resize(rule.index + 1);
    plan->rules[rule.index] = std::move(rp);
  }
  if (out.errors.empty()) out.plan = std::move(plan);
  return out;
}

filter* dlp_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  (void)ex;
  if (!plan_->any_rule && plan_->blocklist.empty()) return nullptr;
  return make<dlp_filter>(arena, *plan_);
}

}  // namespace airlock::filters::dlp
