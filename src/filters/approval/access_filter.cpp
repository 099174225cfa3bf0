#include "filters/approval/access_filter.hpp"

#include "core/str_cat.hpp"
#include "net/host.hpp"
#include "policy/snapshot.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <optional>

namespace airlock::filters::approval {
namespace {

constexpr std::size_t max_reason = 1024;
constexpr std::uint64_t max_body = 4096;
constexpr std::string_view endpoint_path = "/request-access";

// The exchange's rule while the endpoint answers it: no rule's terms (no checks, nothing
// injected), and no per-rule state (index past every rule's).
const policy::compiled_rule& endpoint_rule() {
  static const policy::compiled_rule rule = [] {
    policy::compiled_rule r;
    r.name = "(airlock.internal)";
    r.index = static_cast<std::size_t>(-1);
    return r;
  }();
  return rule;
}

std::string error_json(std::string_view message) {
  boost::json::object o;
  o["error"] = message;
  return boost::json::serialize(o);
}

// The answer instead of forwarding: recorded under proxy_endpoint with this status and body.
verdict answer(exchange& ex, unsigned status, std::string body) {
  ex.record.answer_status = status;
  ex.record.answer_body = std::move(body);
  return verdict::refuse(core::errc::proxy_endpoint, core::str_cat(endpoint_path, " answered"));
}

std::uint64_t query_id(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return 0;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (!pair.starts_with("id=")) continue;
    pair.remove_prefix(3);
    std::uint64_t id = 0;
    auto [p, ec] = std::from_chars(pair.data(), pair.data() + pair.size(), id);
    return ec == std::errc{} && p == pair.data() + pair.size() ? id : 0;
  }
  return 0;
}

class access_filter final : public filter {
 public:
  explicit access_filter(const access_factory& f) : factory_(f) {}

  verdict on_request_head(exchange& ex) override {
    if (ex.target.host.text != reserved_host) return verdict::next();
    ex.proxy_endpoint = true;
    ex.rule = &endpoint_rule();
    ex.record.rule = endpoint_rule().name;
    // Never a tunnel: nothing to connect to, and the name must never reach a resolver.
    if (ex.connect || ex.in_tunnel)
      return verdict::refuse(core::errc::proxy_endpoint,
                             "airlock.internal is answered only as plain http://airlock.internal/");
    registry* approvals = factory_.approvals();
    if (approvals == nullptr) return answer(ex, 404, error_json("access requests are off"));
    if (ex.path != endpoint_path) return answer(ex, 404, error_json("not found"));
    const auto method = ex.request->method();
    if (method == boost::beast::http::verb::get) {
      const std::uint64_t id = query_id(ex.path_and_query);
      const std::string outcome = id ? approvals->access_outcome(id, ex.record.agent) : "";
      if (outcome.empty()) return answer(ex, 404, error_json("no such access request"));
      boost::json::object o;
      o["id"] = id;
      o["outcome"] = outcome;
      return answer(ex, 200, boost::json::serialize(o));
    }
    if (method != boost::beast::http::verb::post)
      return answer(ex, 405, error_json("GET ?id=N or POST"));
    posted_ = true;
    if (ex.body_limit > max_body) ex.body_limit = max_body;
    if (ex.content_length.value_or(0) > max_body)
      return answer(ex, 413, error_json("at most 4096 bytes of JSON"));
    return verdict::next();  // the body follows (request_body_use: whole)
  }

  body_use request_body_use(const exchange&) const override {
    return posted_ ? body_use::whole : body_use::none;
  }

  verdict on_request_body(exchange& ex, std::string_view body, bool) override {
    // Read now for a clear 400; asked only in on_forward, after DLP read the body (below).
    if (auto bad = read_request(ex, body)) return std::move(*bad);
    return verdict::next();
  }

  verdict on_forward(exchange& ex) override {
    // Never forwarded, whatever the filters before said (a body-less POST ends up here).
    if (!ex.proxy_endpoint) return verdict::next();
    if (!asked_) return answer(ex, 400, error_json("the body must be a JSON object"));
    // The host and reason are shown to an operator and recorded: an access request DLP found a
    // secret in is refused under every action (`report` and `redact` included), as a request
    // it blocks would be, since a redacted host asks for nothing.
    if (!ex.record.dlp.empty()) {
      for (auto& finding : ex.record.dlp)
        finding.action = "block";
      return verdict::refuse(core::errc::dlp_blocked,
                             "an access request with a secret in it is not shown to an operator");
    }
    return ask(ex);
  }

 private:
  // The access request in `body` (asked_), or the 400 that says what is wrong with it.
  std::optional<verdict> read_request(exchange& ex, std::string_view body) {
    boost::system::error_code ec;
    auto value = boost::json::parse(body, ec);  // also checks that strings are valid UTF-8
    const auto* o = ec ? nullptr : value.if_object();
    if (o == nullptr) return answer(ex, 400, error_json("the body must be a JSON object"));
    request_info r;
    r.agent = ex.record.agent;
    r.access_request = true;
    r.method = "ACCESS";
    const auto* host = o->if_contains("host");
    const auto normalized = host && host->is_string()
                                ? net::normalize_host(std::string_view(host->as_string()))
                                : std::nullopt;
    if (!normalized || normalized->text == reserved_host)
      return answer(ex, 400, error_json("host: a host name or IP address"));
    r.host = normalized->text;
    r.port = 443;
    if (const auto* port = o->if_contains("port")) {
      const auto* n = port->if_int64();
      if (!n || *n < 1 || *n > 65535) return answer(ex, 400, error_json("port: 1 to 65535"));
      r.port = static_cast<std::uint16_t>(*n);
    }
    if (const auto* reason = o->if_contains("reason")) {
      if (!reason->is_string() || reason->as_string().size() > max_reason)
        return answer(ex, 400, error_json("reason: a string of at most 1024 bytes"));
      r.reason = std::string(reason->as_string());
    }
    asked_ = std::move(r);
    return std::nullopt;
  }

  verdict ask(exchange& ex) {
    std::string why;
    const auto id =
        factory_.approvals()->ask(std::move(*asked_), factory_.limits(), factory_.timeout(), why);
    if (id == 0) {
      auto v = verdict::refuse(core::errc::approval_limit, std::move(why));
      v.retry_after = 1;
      return v;
    }
    boost::json::object out;
    out["id"] = id;
    out["outcome"] = "pending";
    out["poll"] = core::str_cat("http://", reserved_host, endpoint_path, "?id=", id);
    return answer(ex, 202, boost::json::serialize(out));
  }

  const access_factory& factory_;
  bool posted_ = false;
  std::optional<request_info> asked_;
};

}  // namespace

access_factory::access_factory(const policy::snapshot& snapshot, registry* approvals)
    : registry_(approvals) {
  const auto& a = snapshot.model().approvals;
  enabled_ = a.access_requests && approvals != nullptr;
  bounds_.per_agent = a.max_held_per_agent;
  bounds_.total = a.max_held_total;
  timeout_ = a.timeout;
}

filter* access_factory::create(const exchange&, std::pmr::memory_resource& arena) const {
  // Every exchange: the name is reserved whether or not access requests are on.
  return make<access_filter>(arena, *this);
}

}  // namespace airlock::filters::approval
