// GET /approvals: the registry as JSON (registry.hpp).
#include "filters/approval/json_fields.hpp"
#include "filters/approval/registry.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace airlock::filters::approval {
namespace {

using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;

std::int64_t unix_seconds(sys_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

void put_request(boost::json::object& o, const request_info& r) {
  o["kind"] = r.access_request ? "access_request" : "request";
  o["agent"] = r.agent;
  o["host"] = r.host;
  o["port"] = r.port;
  o["method"] = r.method;
  o["path"] = r.path;
  o["in_tunnel"] = r.in_tunnel;
  o["rule"] = r.rule;
  o["reason"] = r.reason;
}

void put_grant(boost::json::object& o, const grant& g) {
  o["id"] = g.id;
  o["agent"] = g.agent;
  o["host"] = g.host;
  o["port"] = g.port;
  o["method"] = g.method;
  o["path_prefix"] = g.path_prefix;
  o["by"] = g.by;
}

void registry::sweep() {
  std::vector<timed_out_access> ended;
  {
    std::lock_guard lk(mu_);
    ended = expire();
  }
  report_timed_out(ended);
}

std::string registry::json() {
  namespace json = boost::json;
  std::vector<timed_out_access> ended;
  std::string text;
  {
    std::lock_guard lk(mu_);
    ended = expire();
    text = json_locked();
  }
  report_timed_out(ended);
  return text;
}

std::string registry::json_locked() const {
  namespace json = boost::json;
  json::array pending_list, decided, grants;
  const auto snow = steady::now();
  for (const auto& [id, e] : held_) {
    json::object o;
    o["id"] = id;
    put_request(o, e.request);
    o["since"] = unix_seconds(e.since);
    o["outcome"] = e.outcome;
    if (e.outcome == "pending") {
      o["seconds_left"] = std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::seconds>(e.deadline - snow).count());
      pending_list.push_back(std::move(o));
    } else {
      decided.push_back(std::move(o));
    }
  }
  for (const auto& g : grants_) {
    json::object o;
    put_grant(o, g);
    if (g.expires == sys_clock::time_point::max())
      o["expires"] = nullptr;
    else
      o["expires"] = unix_seconds(g.expires);
    grants.push_back(std::move(o));
  }
  json::object root;
  root["pending"] = std::move(pending_list);
  root["decided"] = std::move(decided);
  root["grants"] = std::move(grants);
  root["overlay_diff"] = overlay_diff_;
  return json::serialize(root);
}

}  // namespace airlock::filters::approval
