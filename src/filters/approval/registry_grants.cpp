// The registry's grants (`agent_host` approvals, here or decided on another replica) and the
// decision scopes' names; the holds themselves are in registry.cpp.
#include "filters/approval/registry.hpp"

#include "net/url_path.hpp"

#include <algorithm>

namespace airlock::filters::approval {
namespace {

using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;

// Grants kept at once (oldest expiring first are dropped beyond this): a bound on what the
// admin port can make the proxy hold, whatever operators click.
constexpr std::size_t max_grants = 4096;

}  // namespace

bool path_under_prefix(std::string_view path, std::string_view prefix) noexcept {
  // A server resolves "/v1/../admin" and "/v1/..%2fadmin" to "/admin" after our check
  // (RFC 3986 section 5.2.4; an encoded slash or a backslash decoded before routing): such a
  // path is under no prefix, whatever its text starts with.
  if (net::has_dot_segment(path) || net::has_hidden_separator(path)) return false;
  if (!path.starts_with(prefix)) return false;
  // Whole segments: "/v1" covers "/v1" and "/v1/...", not "/v10" or "/v1.json"; "/v1/" ends
  // on a boundary already.
  return prefix.ends_with('/') || path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::optional<scope> parse_scope(std::string_view text) {
  if (text == "once") return scope::once;
  if (text == "agent_host") return scope::agent_host;
  if (text == "permanent") return scope::permanent;
  return std::nullopt;
}

std::string_view scope_name(scope s) {
  switch (s) {
    case scope::once:
      return "once";
    case scope::agent_host:
      return "agent_host";
    case scope::permanent:
      return "permanent";
  }
  return "once";
}

scope effective_scope(const request_info& r, scope asked) {
  return r.access_request && asked == scope::once ? scope::agent_host : asked;
}

bool grant::covers(const request_info& r, sys_clock::time_point now) const {
  if (now >= expires || r.redacted || r.agent != agent || r.host != host || r.port != port)
    return false;
  // A method or path the grant names is only visible in a request, not in a CONNECT: a tunnel
  // is covered by a host grant only (its requests, when inspected, are checked one by one).
  if (!method.empty() && (r.connect || r.method != method)) return false;
  if (!path_prefix.empty() && (r.connect || !path_under_prefix(r.path, path_prefix))) return false;
  return true;
}

bool registry::granted(const request_info& r) {
  std::vector<timed_out_access> ended;
  bool covered = false;
  {
    std::lock_guard lk(mu_);
    ended = expire();
    const auto now = sys_clock::now();
    covered = std::any_of(grants_.begin(), grants_.end(),
                          [&](const grant& g) { return g.covers(r, now); });
  }
  report_timed_out(ended);
  return covered;
}

void registry::store_grant(grant g, std::vector<std::function<void()>>& calls,
                           std::vector<std::uint64_t>& released) {
  const auto now = sys_clock::now();
  for (auto it = held_.begin(); it != held_.end();) {
    entry& e = it->second;
    if (e.request.access_request || e.outcome != "pending" || !g.covers(e.request, now)) {
      ++it;
      continue;
    }
    released.push_back(it->first);
    if (!e.started) {  // its session has not begun to wait: start() lets it go
      e.outcome = "approved";
      e.early = verdict::next();
      e.forget_at = steady::now() + keep_outcome_;
      ++it;
      continue;
    }
    calls.push_back([done = std::move(e.done)] { done(verdict::next()); });
    it = held_.erase(it);
  }
  if (grants_.size() >= max_grants)
    grants_.erase(
        std::min_element(grants_.begin(), grants_.end(),
                         [](const grant& a, const grant& b) { return a.expires < b.expires; }));
  grants_.push_back(std::move(g));
}

void registry::add_grant(grant g) {
  if (agent_stopped(g.agent)) return;
  std::vector<std::function<void()>> calls;
  std::vector<std::uint64_t> released;
  std::vector<timed_out_access> ended;
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    ended = expire();
    store_grant(std::move(g), calls, released);
  }
  report_timed_out(ended);
  for (auto& c : calls)
    c();
  for (auto id : released)
    tell_fleet(id, nullptr, {});
}

}  // namespace airlock::filters::approval
