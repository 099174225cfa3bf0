#include "filters/mcp/mcp_filter.hpp"

#include "core/str_cat.hpp"
#include "filters/dlp/dlp_filter.hpp"
#include "filters/dlp/scanner.hpp"
#include "filters/mcp/decide.hpp"
#include "filters/mcp/jsonrpc.hpp"
#include "filters/mcp/listing.hpp"
#include "filters/mcp/media_type.hpp"
#include "filters/rate_limit/tool_limits.hpp"
#include "filters/validation/text.hpp"
#include "policy/snapshot.hpp"

#include <algorithm>

namespace airlock::filters::mcp {
namespace {

namespace http = boost::beast::http;
using policy::model::dlp_action;

class mcp_filter final : public filter {
 public:
  mcp_filter(const mcp_plan& plan, const rate_limit::tool_limits& tools)
      : plan_(plan), tools_(tools) {}

  verdict on_request_head(exchange& ex) override {
    // The rule is known now (the decision filter ran); the filter was made before it.
    if (ex.rule == nullptr || ex.rule->index >= plan_.rules.size() ||
        !plan_.rules[ex.rule->index].active)
      return verdict::next();
    if (ex.request->method() == http::verb::get) {
      // The server's own stream: the older HTTP+SSE transport answers every request there,
      // and streamable HTTP replays answers on a GET that resumes a stream (Last-Event-ID). Its
      // listings are filtered as a POST's answer is, whatever they answer.
      policy_ = &ex.rule->mcp;
      if (policy_->filter_lists)
        stream_.emplace(*policy_, ex.rule->index, *plan_.memory,
                        listing_stream::source::server_stream);
      return verdict::next();
    }
    if (ex.request->method() != http::verb::post) return verdict::next();
    rule_ = &plan_.rules[ex.rule->index];
    policy_ = &ex.rule->mcp;
    ex.body_limit = std::min(ex.body_limit, policy_->max_body_bytes);
    if (!ex.has_body) {
      parsed_body empty;
      empty.error = "a POST to an MCP endpoint carries a JSON-RPC message";
      empty.error_code = kParseError;
      return verdict::violation(core::errc::mcp_invalid, core::str_cat("mcp: ", *empty.error),
                                *answer_for(empty, {}));
    }
    // The body is read as UTF-8 JSON only: one labelled otherwise would be read by the server
    // as something else than what the filter decided (media_type.hpp).
    if (const std::string why = unreadable_request(*ex.request); !why.empty())
      return verdict::violation(
          core::errc::mcp_invalid,
          core::str_cat("mcp: ", why, ": an MCP body is read only as application/json in UTF-8"));
    if (ex.content_length.value_or(0) > ex.body_limit)
      return verdict::refuse(
          core::errc::body_too_large,
          core::str_cat("rule ", ex.rule->name, " allows ", ex.body_limit, " bytes of MCP body"));
    return verdict::next();
  }

  body_use request_body_use(const exchange&) const override {
    return rule_ != nullptr ? body_use::whole : body_use::none;
  }

  verdict on_request_body(exchange& ex, std::string_view body, bool) override {
    const parsed_body parsed = parse_jsonrpc(body, policy_->max_batch);
    if (parsed.error)
      return verdict::violation(core::errc::mcp_invalid, core::str_cat("mcp: ", *parsed.error),
                                *answer_for(parsed, {}));
    std::vector<std::optional<refusal>> refusals(parsed.messages.size());
    const refusal* first = nullptr;
    std::size_t first_at = 0;
    for (std::size_t i = 0; i < parsed.messages.size(); ++i) {
      call_decision d = decide(*policy_, parsed.messages[i],
                               policy_->scan_arguments ? rule_->scan.get() : nullptr, rule_->block);
      const message& m = parsed.messages[i];
      ex.record.mcp.push_back({d.method, d.tool});
      record_findings(ex, d.found);
      if (!d.refused && m.tool_named && plan_.memory->tainted(ex.rule->index, m.tool))
        d.refused = refusal{kToolChanged, core::errc::mcp_tool_denied,
                            core::str_cat("tool '", validation::printable(m.tool),
                                          "': its description changed from its pin or carries a "
                                          "prompt injection; refused until a listing shows it "
                                          "pinned again")};
      if (!d.refused && d.listed_tool != nullptr) d.refused = take_rate(ex, *d.listed_tool);
      if (!d.refused && m.kind == message_kind::request && policy_->filter_lists) note_listing(m);
      if (!d.refused) continue;
      refusals[i] = std::move(d.refused);
      if (first == nullptr) {
        first = &*refusals[i];
        first_at = i;
      }
    }
    if (first == nullptr) {
      if (!listings_.empty())
        stream_.emplace(*policy_, ex.rule->index, *plan_.memory, std::move(listings_));
      return verdict::next();
    }
    std::string detail = parsed.batch ? core::str_cat("mcp: batch refused: message ", first_at + 1,
                                                      ": ", first->message)
                                      : core::str_cat("mcp: ", first->message);
    verdict v = verdict::violation(first->reason, std::move(detail));
    if (auto answer = answer_for(parsed, refusals))
      v = verdict::violation(first->reason, std::move(v.detail), std::move(*answer));
    v.retry_after = retry_after_;
    return v;
  }

 private:
  // --- responses: listings filtered ---

  void note_listing(const message& m) {
    if (m.method == "tools/list")
      listings_.push_back({m.id, list_kind::tools});
    else if (m.method == "resources/list")
      listings_.push_back({m.id, list_kind::resources});
    else if (m.method == "prompts/list")
      listings_.push_back({m.id, list_kind::prompts});
  }

  verdict on_forward(exchange& ex) override {
    // The listing answer must come back readable: no content coding.
    if (stream_) ex.request->set(http::field::accept_encoding, "identity");
    return verdict::next();
  }

  verdict on_response_head(exchange& ex) override {
    if (!stream_ || !ex.response_has_body) return verdict::next();
    auto& res = *ex.response;
    const body_reading head = read_body_head(res);
    const bool event_stream = head.type && head.type->is("text", "event-stream");
    // Nothing a client reads as the server's messages: a GET's answer that is not an event
    // stream (a client reads no other).
    const bool server_stream = stream_->server_stream();
    if (server_stream && !event_stream) {
      stream_.reset();
      return verdict::next();
    }
    // An empty answer (the older transport's 202 to a POST, whose answer comes on the GET
    // stream): held to being empty, whatever its type.
    if (!server_stream && res[http::field::content_length] == "0") {
      stream_->start_empty();
      reading_ = true;
      return verdict::next();
    }
    const bool success = res.result_int() / 100 == 2;
    const bool listing_type = head.type && (head.type->is("application", "json") ||
                                            head.type->is("text", "event-stream"));
    // An error page in another media type (text/html on a 404) is no answer an MCP client
    // reads as a listing: it passes. A success, or JSON or events, must be read.
    if (!success && !listing_type && head.unreadable.empty()) {
      stream_.reset();
      return verdict::next();
    }
    if (!head.unreadable.empty())
      return verdict::fail(
          core::errc::upstream_error,
          core::str_cat("mcp: a listing answer cannot be filtered: ", head.unreadable));
    if (!listing_type || !stream_->start(*head.type))
      return verdict::fail(core::errc::upstream_error,
                           core::str_cat("mcp: a listing answer cannot be filtered: Content-Type '",
                                         head.type ? validation::printable(core::str_cat(
                                                         head.type->type, "/", head.type->subtype))
                                                   : std::string("(none)"),
                                         "' (application/json or text/event-stream expected)"));
    res.erase(http::field::content_length);  // a filtered list changes the length
    ex.response_reframed = true;
    reading_ = true;
    return verdict::next();
  }

  body_use response_body_use(const exchange&) const override {
    return reading_ ? body_use::transform : body_use::none;
  }

  verdict on_response_body(exchange& ex, body_chunk& chunk) override {
    if (!stream_->feed(chunk.data, chunk.last, *chunk.out))
      return verdict::fail(core::errc::response_too_large,
                           core::str_cat("mcp: a listing answer over max_response_bytes (",
                                         policy_->max_response_bytes, ") or unreadable"));
    if (chunk.last) record_dropped(ex);
    return verdict::next();
  }

  // A stream cut before its end (the agent closed the server's GET stream) is recorded too.
  void on_end(exchange& ex) override {
    if (reading_ && !recorded_) record_dropped(ex);
  }

  // Changed and poisoned tools go into the record as findings (location mcp-tools-list), and
  // their names into the detail.
  void record_dropped(exchange& ex) {
    recorded_ = true;
    std::string names;
    for (const auto& d : stream_->dropped()) {
      if (!d.taints && !d.kept) continue;
      const std::string_view cls =
          d.why.starts_with("description changed") ? "mcp-tool-changed" : "mcp-tool-injection";
      ex.record.dlp.push_back({cls, "mcp-tools-list", d.kept ? "report" : "drop"});
      if (names.size() < 400)
        names +=
            core::str_cat(names.empty() ? "" : "; ", d.name, ": ", d.why, " (sha256 ", d.pin, ")");
    }
    // A listing answer withheld (listing.hpp): the client got JSON-RPC errors in its place.
    std::string withheld;
    for (const auto& why : stream_->withheld())
      withheld += core::str_cat(withheld.empty() ? "" : "; ", why);
    if (!withheld.empty()) {
      ex.record.dlp.push_back({"mcp-listing-unreadable", "mcp-tools-list", "withhold"});
      names = core::str_cat("answer withheld: ", withheld, names.empty() ? "" : "; ", names);
    }
    if (!names.empty() && ex.record.detail.empty())
      ex.record.detail = core::str_cat("mcp: tools/list: ", names);
  }

  // The tool's own buckets (tool_limits.hpp), when it has a `rate`.
  std::optional<refusal> take_rate(exchange& ex, const policy::compiled_mcp_tool& tool) {
    if (!tools_.any() || ex.agent == nullptr || ex.snapshot == nullptr) return std::nullopt;
    const auto agents = ex.snapshot->agents();
    const auto agent = static_cast<std::size_t>(ex.agent - agents.data());
    const auto index = static_cast<std::size_t>(&tool - policy_->tools.data());
    const auto a = tools_.admit(agent, ex.rule->index, index, ex.clock());
    if (a) return std::nullopt;
    retry_after_ = std::max(retry_after_, a.retry_after_seconds);
    return refusal{kToolRateLimited, a.error,
                   core::str_cat("tool '", tool.name, "': ", a.limit, "; retry after ",
                                 a.retry_after_seconds, "s")};
  }

  void record_findings(exchange& ex, const dlp::findings& found) const {
    const std::string_view action = rule_->block ? "block" : "report";
    for (const auto& f : found) {
      const bool seen = std::any_of(ex.record.dlp.begin(), ex.record.dlp.end(), [&](const auto& r) {
        return r.cls == f.cls && r.location == f.location;
      });
      if (!seen) ex.record.dlp.push_back({f.cls, f.location, action});
    }
  }

  const mcp_plan& plan_;
  const rate_limit::tool_limits& tools_;
  std::uint32_t retry_after_ = 0;              // seconds, the longest of the tools' refusals
  const mcp_plan::rule_plan* rule_ = nullptr;  // set for a POST under a rule with `mcp`
  const policy::compiled_mcp* policy_ = nullptr;
  std::vector<listing_request> listings_;  // the body's listing requests
  std::optional<listing_stream> stream_;   // their answer, when the body went on
  bool recorded_ = false;                  // record_dropped ran
  bool reading_ = false;
};

}  // namespace

mcp_plan::build_result mcp_plan::build(const policy::snapshot& snapshot, const dlp::dlp_plan& dlp,
                                       std::span<const redaction::literal_secret> retired) {
  build_result out;
  auto plan = std::make_shared<mcp_plan>();
  plan->memory = std::make_shared<tool_memory>();
  std::shared_ptr<const dlp::scanner> fallback;  // the default classes, built once if needed
  for (const auto& rule : snapshot.rules()) {
    if (!rule.mcp.active) continue;
    if (!rule.mcp.pins_file.empty()) {
      std::string error;
      if (!plan->memory->load(rule.index, rule.name, rule.mcp.pins_file, error)) {
        out.errors.push_back(core::str_cat("rule ", rule.name, ": mcp.pins_file: ", error));
        return out;
      }
    }
    rule_plan rp;
    rp.active = true;
    const dlp::dlp_plan::rule_plan* own =
        rule.index < dlp.rules.size() && dlp.rules[rule.index].config != nullptr
            ? &dlp.rules[rule.index]
            : nullptr;
    if (rule.mcp.scan_arguments && own != nullptr) {
      rp.scan = own->scan;
      rp.block = own->config->action == dlp_action::block;
    } else if (rule.mcp.scan_arguments) {
      if (!fallback) {
        auto built = dlp::scanner::build(dlp::scanner_config_for(snapshot, nullptr, retired));
        for (auto& e : built.errors)
          out.errors.push_back(core::str_cat("mcp: ", e));
        if (!built.built) return out;
        fallback = std::move(built.built);
      }
      rp.scan = fallback;
    }
    if (plan->rules.size() <= rule.index) plan->rules.resize(rule.index + 1);
    plan->rules[rule.index] = std::move(rp);
    plan->any_rule = true;
  }
  out.plan = std::move(plan);
  return out;
}

filter* mcp_factory::create(const exchange& ex, std::pmr::memory_resource& arena) const {
  if (ex.connect || !plan_->any_rule) return nullptr;
  return make<mcp_filter>(arena, *plan_, *tools_);
}

}  // namespace airlock::filters::mcp
