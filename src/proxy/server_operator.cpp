// What the admin port asks of the server, apart from reloads: stop and resume an agent, the
// agents' state (GET /agents), the reload status (GET /policy) and a permanent approval written
// to the policy's overlay file (issue 20).
#include "proxy/server.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"
#include "core/str_cat.hpp"
#include "filters/approval/overlay.hpp"
#include "tls/leaf_cache.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>

namespace airlock::proxy {

namespace asio = boost::asio;

server::control_outcome server::agent_control(std::string_view agent, bool stop,
                                              std::string& message) {
  const bool ok = stop ? rates_.stop(agent) : rates_.resume(agent);
  if (!ok) {
    message = core::str_cat("no agent '", agent, "' in the policy\n");
    return control_outcome::not_found;
  }
  // state: redis: every replica, and any that restarts, does the same once the store has it.
  // The answer says whether it does: the store answers within its timeout (at once when it is
  // down), so the admin port waits no longer than store_wait.
  bool fleet_has_it = true;
  if (options_.store != nullptr) {
    auto delivered = std::make_shared<std::promise<bool>>();
    auto answer = delivered->get_future();
    options_.store->publish_stop(agent, stop, [delivered](bool d) { delivered->set_value(d); });
    fleet_has_it =
        answer.wait_for(options_.store_wait) == std::future_status::ready && answer.get();
  }
  const std::string_view did = stop ? "stopped" : "resumed";
  message = fleet_has_it ? core::str_cat("agent '", agent, "' ", did, "\n")
                         : core::str_cat("agent '", agent, "' ", did,
                                         " on this replica; the shared store is unavailable: the "
                                         "other replicas hear of it when the store is back\n");
  // Its open tunnels (opaque, intercepted, plain) are cut too: a new request inside an
  // intercepted one would be refused anyway, but an opaque tunnel carries no request to refuse.
  if (stop) {
    for (auto& w : workers_)
      asio::post(w->context(), [&w, name = std::string(agent)] {
        if (const auto n = w->cut_tunnels(name); n > 0)
          AIRLOCK_LOG(warn, "policy", "agent ", name, ": ", n, " open tunnel(s) cut");
      });
  }
  AIRLOCK_LOG(warn, "policy", "agent ", agent, " ", did, " by an operator (admin port)",
              fleet_has_it ? "" : "; the fleet's part waits for the shared store");
  return fleet_has_it ? control_outcome::done : control_outcome::fleet_pending;
}

std::string server::agents_json() const {
  boost::json::array agents;
  for (const auto& a : rates_.status(core::steady_now_ns())) {
    boost::json::object o;
    o["name"] = a.name;
    o["in_policy"] = a.in_policy;
    o["stopped"] = a.stopped;
    o["suspended_seconds_left"] = a.suspended_seconds_left;
    o["in_flight"] = a.in_flight;
    o["concurrent"] = a.concurrent;
    // null: no such quota, or the fleet's (state: redis), which this replica does not count.
    auto left = [](const std::optional<std::uint64_t>& v) -> boost::json::value {
      if (v) return *v;
      return nullptr;
    };
    o["requests_per_hour_left"] = left(a.requests_per_hour_left);
    o["bytes_per_hour_left"] = left(a.bytes_per_hour_left);
    agents.push_back(std::move(o));
  }
  boost::json::object root;
  root["agents"] = std::move(agents);
  // state: redis: stops and breaker suspensions are the fleet's (concurrency stays this
  // replica's).
  root["shared"] = options_.store != nullptr;
  return boost::json::serialize(root);
}

reload_status server::status() const {
  reload_status out;
  {
    std::lock_guard lock(reload_mutex_);
    out = status_;
  }
  if (const auto active = shared_.active.load(); active && active->tls && active->tls->leaves)
    out.ca_fingerprint = active->tls->leaves->minter().ca().fingerprint();
  return out;
}

bool server::write_permanent(const filters::approval::request_info& r, bool same_method,
                             std::string& message) {
  namespace approval = filters::approval;
  const auto current = shared_.current();
  const auto& model = current->model();
  const std::string& file = model.approvals.overlay;
  if (file.empty()) {
    message = "the policy names no approvals.overlay file: permanent approvals are off";
    return false;
  }
  if (std::find(model.includes.begin(), model.includes.end(), file) == model.includes.end()) {
    message = core::str_cat("the policy does not include its approvals.overlay (", file, ")");
    return false;
  }
  std::error_code ec;
  const bool existed = std::filesystem::exists(file, ec);
  const std::string before = approval::read_file_or_empty(file);
  auto change = approval::add_to_overlay(*current, r, same_method, before);
  if (!change.error.empty()) {
    message = core::str_cat("nothing written to ", file, ": ", change.error);
    return false;
  }
  if (!approval::replace_file(file, change.text, message)) return false;
  std::string loaded;
  if (!reload("approval", loaded)) {
    // The overlay as it was: the next reload must not trip on what this one refused.
    std::string ignored;
    if (existed)
      approval::replace_file(file, before, ignored);
    else
      std::filesystem::remove(file, ec);
    message = core::str_cat("the overlay with ", change.rule_name,
                            " did not load; it is as it was:\n", loaded);
    return false;
  }
  approvals_.note_overlay_change(change.diff);
  message = core::str_cat("approved for good: ", change.rule_name, " written to ", file, "; ",
                          loaded, "\n", change.diff);
  return true;
}

}  // namespace airlock::proxy
