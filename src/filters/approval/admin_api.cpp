#include "filters/approval/admin_api.hpp"

#include "core/str_cat.hpp"
#include "core/units.hpp"
#include "net/url_path.hpp"

#include <boost/json.hpp>

#include <charconv>

namespace airlock::filters::approval {
namespace {

// The longest grant an operator can give from the admin port: longer is `permanent`.
constexpr std::chrono::milliseconds max_duration{30LL * 24 * 3600 * 1000};
constexpr std::size_t max_prefix = 1024;

}  // namespace

bool read_decision(std::string_view body, decision& d, std::string& error) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return true;
  boost::system::error_code ec;
  auto value = boost::json::parse(body, ec);
  if (ec || !value.is_object()) {
    error = "the body must be a JSON object";
    return false;
  }
  for (const auto& [key, v] : value.as_object()) {
    if (key == "scope") {
      auto s = v.if_string() ? parse_scope(std::string_view(*v.if_string())) : std::nullopt;
      if (!s) {
        error = "scope: once, agent_host or permanent";
        return false;
      }
      d.scope = *s;
    } else if (key == "duration") {
      auto t =
          v.if_string() ? core::parse_duration(std::string_view(*v.if_string())) : std::nullopt;
      if (!t || t->count() <= 0 || *t > max_duration) {
        error = "duration: a duration from 1s to 30d (e.g. 10m, 1h)";
        return false;
      }
      d.duration = *t;
    } else if (key == "method") {
      if (!v.is_bool()) {
        error = "method: true or false";
        return false;
      }
      d.same_method = v.as_bool();
    } else if (key == "path_prefix") {
      const auto* s = v.if_string();
      // A prefix a server would resolve elsewhere would cover no request (path_under_prefix).
      if (!s || s->empty() || s->front() != '/' || s->size() > max_prefix ||
          net::has_dot_segment(*s) || net::has_hidden_separator(*s)) {
        error = "path_prefix: a path starting with '/', without dot segments or encoded slashes";
        return false;
      }
      d.path_prefix = std::string(*s);
    } else {
      error = core::str_cat("unknown key '", std::string_view(key).substr(0, 40), "'");
      return false;
    }
  }
  // A permanent approval is a rule in the overlay, which has no path prefix: one asked for
  // would narrow the grant until the next reload and then cover every path.
  if (d.scope == scope::permanent && !d.path_prefix.empty()) {
    error = "path_prefix: only with scope agent_host (a permanent approval covers every path)";
    return false;
  }
  return true;
}

unsigned decide_from_admin(registry& approvals, std::string_view id, bool approve,
                           std::string_view body, std::string by, std::string& message,
                           admin_decision* out) {
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc{} || p != id.data() + id.size() || n == 0) {
    message = "not found\n";
    return 404;
  }
  decision d;
  d.approve = approve;
  d.by = std::move(by);
  if (out != nullptr) out->id = n;
  if (!read_decision(body, d, message)) {
    message += "\n";
    return 400;
  }
  if (out != nullptr) out->d = d;
  if (approvals.decide(n, d, message, out != nullptr ? &out->target : nullptr)) {
    message += "\n";
    return 200;
  }
  message += "\n";
  return message.starts_with("no pending approval") ? 404 : 409;
}

}  // namespace airlock::filters::approval
