#include "telemetry/ocsf_format.hpp"

#include "telemetry/audit_format.hpp"

#include <charconv>
#include <chrono>

namespace airlock::telemetry {
namespace {

// A JSON object written in order: key/value pairs, nested objects.
class writer {
 public:
  explicit writer(std::string& out) : out_(out) {}
  writer& str(std::string_view k, std::string_view v) {
    key(k);
    append_json_string(out_, v);
    return *this;
  }
  writer& num(std::string_view k, std::int64_t v) {
    key(k);
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, ec == std::errc{} ? end : buf);
    return *this;
  }
  writer& open(std::string_view k) {
    key(k);
    out_.push_back('{');
    first_ = true;
    return *this;
  }
  writer& close() {
    out_.push_back('}');
    first_ = false;
    return *this;
  }
  writer& raw(std::string_view k, std::string_view json) {
    key(k);
    out_.append(json);
    return *this;
  }

 private:
  void key(std::string_view k) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.push_back('"');
    out_.append(k);
    out_.append("\":");
  }
  std::string& out_;
  bool first_ = true;
};

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

struct activity {
  int id;
  std::string_view name;
};

// HTTP Activity's activity_id in OCSF 1.1.0 (PATCH and others: 99 Other with activity_name).
activity http_activity(std::string_view method) {
  static constexpr activity known[] = {{1, "Connect"}, {2, "Delete"}, {3, "Get"}, {4, "Head"},
                                       {5, "Options"}, {6, "Post"},   {7, "Put"}, {8, "Trace"}};
  static constexpr std::string_view methods[] = {"CONNECT", "DELETE", "GET", "HEAD",
                                                 "OPTIONS", "POST",   "PUT", "TRACE"};
  for (std::size_t i = 0; i < std::size(methods); ++i)
    if (method == methods[i]) return known[i];
  return {99, method.empty() ? std::string_view("Other") : method};
}

// "ip:port" or "[v6]:port" split for an endpoint object; false when it is not that.
bool split_endpoint(std::string_view text, std::string_view& ip, std::int64_t& port) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  ip = text.substr(0, colon);
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  const auto p = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return ec == std::errc{} && end == p.data() + p.size() && !ip.empty();
}

void classification(writer& w, int category, std::string_view category_name, int cls,
                    std::string_view class_name, activity a) {
  w.num("activity_id", a.id)
      .str("activity_name", a.name)
      .num("category_uid", category)
      .str("category_name", category_name)
      .num("class_uid", cls)
      .str("class_name", class_name)
      .num("type_uid", static_cast<std::int64_t>(cls) * 100 + a.id);
  std::string type_name(class_name);
  type_name += ": ";
  type_name += a.name;
  w.str("type_name", type_name);
}

// `security_control`: the event carries the Security Control profile's verdict attributes.
void metadata(writer& w, bool security_control) {
  w.open("metadata")
      .str("version", ocsf_version)
      .open("product")
      .str("name", "Airlock")
      .str("vendor_name", "Airlock")
      .close()
      .raw("profiles", security_control ? "[\"security_control\"]" : "[]")
      .close();
}

void endpoint(writer& w, std::string_view key, std::string_view text) {
  std::string_view ip;
  std::int64_t port = 0;
  w.open(key);
  if (split_endpoint(text, ip, port))
    w.str("ip", ip).num("port", port);
  else
    w.str("name", text.empty() ? std::string_view("unknown") : text);
  w.close();
}

// security_control profile: the proxy's verdict. action_id 1 Allowed / 2 Denied; disposition_id
// 1 Allowed / 2 Blocked; status_id 1 Success / 2 Failure.
void verdict(writer& w, std::string_view decision) {
  const bool allowed = decision == "allow" || decision == "report";
  w.num("action_id", allowed ? 1 : 2)
      .str("action", allowed ? "Allowed" : "Denied")
      .num("disposition_id", allowed ? 1 : 2)
      .str("disposition", allowed ? "Allowed" : "Blocked")
      .num("severity_id", decision == "allow" ? 1 : 2)
      .str("severity", decision == "allow" ? "Informational" : "Low")
      .num("status_id", decision == "allow" ? 1 : 2)
      .str("status", decision == "allow" ? "Success" : "Failure");
}

}  // namespace

void append_ocsf_line(std::string& out, const audit_record& r) {
  const bool tunnel = r.scheme == "connect";
  out.push_back('{');
  writer w(out);
  if (tunnel) {
    const activity a = r.decision == "deny"    ? activity{5, "Refuse"}
                       : r.decision == "error" ? activity{4, "Fail"}
                                               : activity{2, "Close"};
    classification(w, 4, "Network Activity", 4001, "Network Activity", a);
  } else {
    classification(w, 4, "Network Activity", 4002, "HTTP Activity", http_activity(r.method));
  }
  w.num("time", epoch_ms(r.time));
  w.num("duration", r.duration.count() < 0 ? 0 : r.duration.count() / 1000);
  verdict(w, r.decision);
  w.str("status_code", r.reason).str("status_detail", r.detail);
  metadata(w, true);
  endpoint(w, "src_endpoint", r.client);
  w.open("dst_endpoint").str("hostname", r.host).num("port", r.port);
  std::string_view ip;
  std::int64_t port = 0;
  if (split_endpoint(r.upstream, ip, port)) w.str("ip", ip);
  w.close();
  // OCSF traffic counts from the source's side: bytes_out went to the destination.
  w.open("traffic")
      .num("bytes_out", static_cast<std::int64_t>(r.bytes_in))
      .num("bytes_in", static_cast<std::int64_t>(r.bytes_out))
      .close();
  if (!tunnel) {
    w.open("http_request").str("http_method", r.method).str("version", r.protocol);
    w.open("url")
        .str("scheme", r.scheme)
        .str("hostname", r.host)
        .num("port", r.port)
        .str("path", r.path)
        .close();
    w.close();
    w.open("http_response").num("code", r.status).close();
  }
  w.open("unmapped")
      .str("agent", r.agent)
      .str("rule", r.rule)
      .str("decision", r.decision)
      .str("reason", r.reason)
      .str("policy_version", r.policy_version)
      .str("protocol", r.protocol)
      .close();
  out.append("}\n");
}

void append_ocsf_line(std::string& out, const audit_event& e) {
  out.push_back('{');
  writer w(out);
  const activity a =
      (e.action == "held" || e.action == "access_requested") ? activity{1, "Create"}
      : (e.action == "timed_out" || e.action == "client_gone" || e.action == "shutting_down")
          ? activity{4, "Delete"}
          : activity{3, "Update"};
  classification(w, 6, "Application Activity", 6003, "API Activity", a);
  w.num("time", epoch_ms(e.time));
  const bool ok = e.outcome == "ok" || e.outcome == "pending";
  // A refused attempt (no operator; a cross-site or misdirected request) is worth a look.
  const bool attempt = e.outcome == "unauthorized" || e.outcome == "refused";
  w.num("severity_id", attempt ? 3 : 1)
      .str("severity", attempt ? "Medium" : "Informational")
      .num("status_id", ok ? 1 : 2)
      .str("status", ok ? "Success" : "Failure")
      .str("status_code", e.outcome)
      .str("status_detail", e.detail);
  metadata(w, false);
  // The actor: the operator (or, for a hold's own events, the agent that asked).
  const bool by_operator = e.type == "operator";
  w.open("actor").open("user").str("name", by_operator ? e.by : e.agent);
  w.str("type", by_operator ? "operator" : "agent").close().close();
  w.open("api").str("operation", e.action).close();
  endpoint(w, "src_endpoint", by_operator ? e.client : std::string_view("airlock"));
  w.open("unmapped")
      .str("type", e.type)
      .str("agent", e.agent)
      .str("method", e.method)
      .str("host", e.host)
      .num("port", e.port)
      .str("path", e.path)
      .num("approval_id", static_cast<std::int64_t>(e.approval_id));
  if (!e.scope.empty()) w.str("scope", e.scope);
  if (e.duration) w.num("duration_s", e.duration->count());
  w.close();
  out.append("}\n");
}

}  // namespace airlock::telemetry
