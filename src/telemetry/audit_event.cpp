#include "telemetry/audit_event.hpp"

#include "telemetry/audit_format.hpp"

#include <charconv>

namespace airlock::telemetry {
namespace {

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc{} ? end : buf);
}

}  // namespace

void append_event_line(std::string& out, const audit_event& e) {
  auto str = [&](std::string_view k, std::string_view v) {
    out.append(",\"").append(k).append("\":");
    append_json_string(out, v);
  };
  out.append("{\"time\":\"");
  append_rfc3339_utc(out, e.time);
  out.push_back('"');
  str("type", e.type);
  str("action", e.action);
  str("by", e.by);
  str("agent", e.agent);
  str("method", e.method);
  str("host", e.host);
  out.append(",\"port\":");
  append_uint(out, e.port);
  str("path", e.path);
  out.append(",\"approval_id\":");
  append_uint(out, e.approval_id);
  if (e.scope.empty())
    out.append(",\"scope\":null");
  else
    str("scope", e.scope);
  out.append(",\"duration_s\":");
  if (e.duration && e.duration->count() >= 0)
    append_uint(out, static_cast<std::uint64_t>(e.duration->count()));
  else
    out.append("null");
  str("outcome", e.outcome);
  str("detail", e.detail);
  str("client", e.client);
  out.append("}\n");
}

}  // namespace airlock::telemetry
