// Stops and the registry (registry.hpp): the kill switch (a stopped agent's holds and access
// requests end at once, its grants are revoked, and whether an agent is stopped is asked again
// where a verdict is taken), and the proxy's own shutdown.
#include "filters/approval/registry.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"

namespace airlock::filters::approval {

void registry::set_revoke_hook(revoke_hook revoked) {
  std::lock_guard lk(mu_);
  fleet_revoked_ = std::move(revoked);
}

void registry::set_stop_check(stop_check stopped) {
  std::lock_guard lk(mu_);
  stopped_agent_ = std::move(stopped);
}

bool registry::agent_stopped(std::string_view agent) {
  stop_check check;
  {
    std::lock_guard lk(mu_);
    check = stopped_agent_;
  }
  // Outside the lock: the check takes the rate-limit registry's own.
  return check && check(agent);
}

std::size_t registry::stop_agent(std::string_view agent) {
  struct ended {
    std::uint64_t id;
    request_info request;
    std::function<void(verdict)> done;  // its session, when it waits
  };
  std::vector<ended> stopped;
  std::size_t revoked = 0;
  revoke_hook revoke;
  auto refusal = [&](std::uint64_t id) {
    return verdict::refuse(core::errc::agent_stopped,
                           core::str_cat("approval ", id, ": agent ", agent,
                                         " was stopped while its request was held"));
  };
  {
    std::lock_guard lk(mu_);
    const auto forget_at = std::chrono::steady_clock::now() + keep_outcome_;
    for (auto it = held_.begin(); it != held_.end();) {
      entry& e = it->second;
      if (e.outcome != "pending" || e.request.agent != agent) {
        ++it;
        continue;
      }
      stopped.push_back({it->first, e.request, nullptr});
      if (e.started && !e.request.access_request) {
        stopped.back().done = std::move(e.done);
        it = held_.erase(it);
        continue;
      }
      // An access request keeps its outcome for polling; a hold whose session has not begun
      // to wait gets its refusal from start().
      e.outcome = "refused";
      e.forget_at = forget_at;
      if (!e.request.access_request) e.early = refusal(it->first);
      ++it;
    }
    revoked = std::erase_if(grants_, [&](const grant& g) { return g.agent == agent; });
    revoke = fleet_revoked_;
  }
  if (revoked > 0)
    AIRLOCK_LOG(warn, "approvals", "agent ", agent, ": ", revoked, " grant(s) revoked (stopped)");
  // Every replica hears the stop and asks: the store's copy goes whether or not this one held
  // any of them.
  if (revoke) revoke(std::string(agent));
  for (auto& s : stopped) {
    if (s.done) s.done(refusal(s.id));
    tell_fleet(s.id, nullptr, {});
    emit("agent_stopped", s.id, s.request, "agent_stopped", "");
  }
  return stopped.size();
}

void registry::end_if_stopped(std::string_view agent) {
  // After the new entry is listed: a stop that set its flag before this check finds it here,
  // one that sets it after finds it in the list (stop_agent runs after the flag is set).
  if (agent_stopped(agent)) stop_agent(agent);
}

void registry::shutdown() {
  std::vector<std::function<void(verdict)>> waiting;
  std::vector<timed_out_access> ended;
  {
    std::lock_guard lk(mu_);
    ended = expire();
  }
  report_timed_out(ended);  // their deadline passed before the stop: recorded as such
  // Access requests still pending have no session to answer: each gets its own record here,
  // or none would say how it ended.
  std::vector<std::pair<std::uint64_t, request_info>> unanswered;
  event_sink sink;
  {
    std::lock_guard lk(mu_);
    stopped_ = true;
    for (auto& [id, e] : held_) {
      if (e.done)
        waiting.push_back(std::move(e.done));
      else if (e.request.access_request && e.outcome == "pending")
        unanswered.emplace_back(id, std::move(e.request));
    }
    held_.clear();
    sink = events_;
    events_ = nullptr;
    fleet_held_ = nullptr;
    fleet_granted_ = nullptr;
    fleet_revoked_ = nullptr;
  }
  if (sink)
    for (const auto& [id, r] : unanswered)
      sink("shutting_down", id, r, "shutting_down", "");
  for (auto& done : waiting)
    done(verdict::refuse(core::errc::shutting_down, "the proxy is stopping"));
}

}  // namespace airlock::filters::approval
