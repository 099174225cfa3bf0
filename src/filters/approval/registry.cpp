#include "filters/approval/registry.hpp"

#include "core/str_cat.hpp"

#include <algorithm>

namespace airlock::filters::approval {
namespace {

using sys_clock = std::chrono::system_clock;
using steady = std::chrono::steady_clock;

// The wait one session awaits: the registry's entry `id`.
class held_wait final : public pending {
 public:
  held_wait(registry& r, std::uint64_t id, std::string agent, std::chrono::milliseconds timeout)
      : registry_(r), id_(id), agent_(std::move(agent)), timeout_(timeout) {}
  void start(std::function<void(verdict)> done) override;
  void cancel() noexcept override;
  void abandon() noexcept override;
  bool watches_client() const noexcept override { return true; }
  std::chrono::milliseconds wait_limit(std::chrono::milliseconds) const override {
    return timeout_;
  }
  verdict timed_out(std::chrono::milliseconds waited) const override {
    return verdict::refuse(
        core::errc::approval_timeout,
        core::str_cat("approval ", id_, ": no decision within ", waited.count() / 1000, " s"));
  }
  // An approval decided before a stop may reach the session after it (or come from another
  // replica that had not heard of it yet): what goes on is decided here, last (fail closed).
  verdict settle(verdict outcome) const override {
    if (!outcome.passes() || !registry_.agent_stopped(agent_)) return outcome;
    return verdict::refuse(core::errc::agent_stopped,
                           core::str_cat("approval ", id_, ": agent ", agent_,
                                         " was stopped while its request was held"));
  }

 private:
  registry& registry_;
  std::uint64_t id_;
  std::string agent_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

// Declared a friend of the registry under this name.
class held_wait_access {
 public:
  static void start(registry& r, std::uint64_t id, std::function<void(verdict)> done);
  static void cancel(registry& r, std::uint64_t id, bool client_gone);
};

namespace {
void held_wait::start(std::function<void(verdict)> done) {
  held_wait_access::start(registry_, id_, std::move(done));
}
void held_wait::cancel() noexcept {
  try {
    held_wait_access::cancel(registry_, id_, false);
  } catch (...) {  // emit() may allocate; a lost audit line must not end the process
  }
}
void held_wait::abandon() noexcept {
  try {
    held_wait_access::cancel(registry_, id_, true);
  } catch (...) {  // as cancel()
  }
}

// The answer to a decision, saying what it did: an agent_host grant names what it covers and
// for how long (the operator approving an access request "once" learns it is a grant).
std::string decided_message(std::uint64_t id, const request_info& r, const decision& d) {
  if (!d.approve) return core::str_cat("approval ", id, " refused");
  std::string out = core::str_cat("approval ", id, " approved (", scope_name(d.scope), ")");
  if (d.scope != scope::agent_host) return out;
  const bool one_method = d.same_method && !r.connect && !r.access_request;
  const bool under_path = !d.path_prefix.empty() && !r.connect && !r.access_request;
  out += core::str_cat(": a grant for agent ", r.agent, " to ", r.host, ":", r.port, ", ",
                       one_method ? r.method + " only" : std::string("any method"), ", ",
                       under_path ? "under " + d.path_prefix : std::string("any path"), ", for ",
                       std::chrono::duration_cast<std::chrono::seconds>(d.duration).count(), " s");
  return out;
}
}  // namespace

void held_wait_access::start(registry& r, std::uint64_t id, std::function<void(verdict)> done) {
  r.start(id, std::move(done));
}
void held_wait_access::cancel(registry& r, std::uint64_t id, bool client_gone) {
  r.cancel(id, client_gone);
}

void registry::set_permanent_writer(permanent_writer w) {
  std::lock_guard lk(mu_);
  permanent_ = std::move(w);
}

void registry::set_event_sink(event_sink s) {
  std::lock_guard lk(mu_);
  events_ = std::move(s);
}

void registry::set_fleet_hooks(hold_hook held, grant_hook granted) {
  std::lock_guard lk(mu_);
  fleet_held_ = std::move(held);
  fleet_granted_ = std::move(granted);
}

void registry::tell_fleet(std::uint64_t id, const request_info* r,
                          std::chrono::milliseconds timeout) {
  hold_hook hook;
  {
    std::lock_guard lk(mu_);
    hook = fleet_held_;
  }
  if (hook) hook(id, r, timeout);
}

void registry::emit(std::string_view event, std::uint64_t id, const request_info& r,
                    std::string_view outcome, std::string_view by) {
  event_sink sink;
  {
    std::lock_guard lk(mu_);
    sink = events_;
  }
  if (sink) sink(event, id, r, outcome, by);
}

std::vector<registry::timed_out_access> registry::expire() {
  const auto now = sys_clock::now();
  std::erase_if(grants_, [&](const grant& g) { return g.expires <= now; });
  const auto snow = steady::now();
  std::erase_if(held_, [&](const auto& kv) {
    const entry& e = kv.second;
    // Decided access requests once polled long enough; decided holds whose session never came
    // to wait (it always does at once: a safety net only).
    return e.outcome != "pending" && e.forget_at <= snow && (e.request.access_request || e.early);
  });
  std::vector<timed_out_access> ended;
  for (auto& [id, e] : held_)
    if (e.request.access_request && e.outcome == "pending" && e.deadline <= snow) {
      e.outcome = "timed_out";
      e.forget_at = snow + keep_outcome_;
      ended.push_back({id, e.request});
    }
  return ended;
}

void registry::report_timed_out(const std::vector<timed_out_access>& ended) {
  // As a held request's timeout (cancel()): it leaves the pending list, one record.
  for (const auto& t : ended) {
    tell_fleet(t.id, nullptr, {});
    emit("timed_out", t.id, t.request, "approval_timeout", "");
  }
}

bool registry::admit(const request_info& r, const bounds& b, std::string& why) {
  if (stopped_) {
    why = "the proxy is stopping";
    return false;
  }
  std::size_t total = 0, mine = 0;
  for (const auto& [id, e] : held_) {
    if (e.outcome != "pending") continue;
    ++total;
    if (e.request.agent == r.agent) ++mine;
  }
  if (mine >= b.per_agent) {
    why = core::str_cat("agent ", r.agent, " has ", mine, " requests awaiting approval (max ",
                        b.per_agent, ")");
    return false;
  }
  if (total >= b.total) {
    why = core::str_cat(total, " requests await approval (max ", b.total, ")");
    return false;
  }
  return true;
}

std::uint64_t registry::enter(const request_info& r, const bounds& b,
                              std::chrono::milliseconds timeout, std::string& why) {
  std::uint64_t id = 0;
  std::vector<timed_out_access> ended;
  {
    std::lock_guard lk(mu_);
    ended = expire();
    if (admit(r, b, why)) {
      id = next_id_++;
      entry& e = held_[id];
      e.request = r;
      e.since = sys_clock::now();
      e.deadline = steady::now() + timeout;
    }
  }
  report_timed_out(ended);
  return id;
}

std::shared_ptr<pending> registry::hold(request_info r, const bounds& b,
                                        std::chrono::milliseconds timeout, std::string& why) {
  const std::uint64_t id = enter(r, b, timeout, why);
  if (id == 0) return nullptr;
  emit("held", id, r, "pending", "");
  tell_fleet(id, &r, timeout);
  end_if_stopped(r.agent);
  return std::make_shared<held_wait>(*this, id, r.agent, timeout);
}

std::uint64_t registry::ask(request_info r, const bounds& b, std::chrono::milliseconds timeout,
                            std::string& why) {
  r.access_request = true;
  const std::uint64_t id = enter(r, b, timeout, why);
  if (id == 0) return 0;
  emit("access_requested", id, r, "pending", "");
  tell_fleet(id, &r, timeout);
  end_if_stopped(r.agent);
  return id;
}

std::string registry::access_outcome(std::uint64_t id, std::string_view agent) {
  std::vector<timed_out_access> ended;
  std::string outcome;
  {
    std::lock_guard lk(mu_);
    ended = expire();
    auto it = held_.find(id);
    if (it != held_.end() && it->second.request.access_request && it->second.request.agent == agent)
      outcome = it->second.outcome;
  }
  report_timed_out(ended);
  return outcome;
}

void registry::start(std::uint64_t id, std::function<void(verdict)> done) {
  std::optional<verdict> now;
  {
    std::lock_guard lk(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) {
      now = verdict::refuse(core::errc::approval_timeout, "the hold ended before it began");
    } else if (it->second.early) {
      now = std::move(*it->second.early);
      held_.erase(it);
    } else {
      it->second.done = std::move(done);
      it->second.started = true;
    }
  }
  if (now) done(std::move(*now));
}

void registry::cancel(std::uint64_t id, bool client_gone) {
  request_info r;
  {
    std::lock_guard lk(mu_);
    auto it = held_.find(id);
    if (it == held_.end()) return;
    r = std::move(it->second.request);
    held_.erase(it);
  }
  tell_fleet(id, nullptr, {});
  if (client_gone)
    emit("client_gone", id, r, "approval_abandoned", "");
  else
    emit("timed_out", id, r, "approval_timeout", "");
}

bool registry::decide(std::uint64_t id, const decision& asked, std::string& message,
                      request_info* target) {
  request_info r;
  permanent_writer writer;
  std::vector<timed_out_access> ended;
  bool pending_now = false;
  {
    std::lock_guard lk(mu_);
    ended = expire();
    auto it = held_.find(id);
    pending_now = it != held_.end() && it->second.outcome == "pending";
    if (pending_now) {
      r = it->second.request;
      writer = permanent_;
    }
  }
  report_timed_out(ended);
  if (!pending_now) {
    message = core::str_cat("no pending approval ", id);
    return false;
  }
  if (target != nullptr) *target = r;
  decision d = asked;
  d.scope = effective_scope(r, asked.scope);
  // The file is written and the policy reloaded outside the lock (a reload takes a while and
  // new requests still ask for grants meanwhile).
  if (d.approve && d.scope == scope::agent_host && r.redacted) {
    // A grant from it would cover nothing (grant::covers): say so, rather than answer as if
    // the agent now had the host.
    message =
        "the held request's host or method carries what DLP redacted, so no grant can "
        "cover it: approve it once";
    return false;
  }
  const bool permanent = d.approve && d.scope == scope::permanent;
  if (permanent) {
    if (!writer) {
      message = "no approvals.overlay file in the policy: permanent approvals are off";
      return false;
    }
    if (!writer(r, d.same_method, message)) return false;
  }
  bool still_held = false;
  if (!apply_decision(id, r, d, still_held)) {
    message = core::str_cat("approval ", id, " ended while it was being decided");
    return false;
  }
  const std::string outcome =
      d.approve ? core::str_cat("approved:", scope_name(d.scope)) : std::string("refused");
  emit("decided", id, r, outcome, d.by);
  if (!still_held)  // written and loaded: in force, whatever became of the request itself
    message = core::str_cat("approval ", id, ": the held request ended before the decision ",
                            "reached it (its timeout, its client gone, or a stop) and was not ",
                            "sent; the approval is in force all the same: ", message);
  if (message.empty()) message = decided_message(id, r, d);
  return true;
}

bool registry::apply_decision(std::uint64_t id, const request_info& r, const decision& d,
                              bool& still_held) {
  std::vector<std::function<void()>> calls;
  std::vector<std::uint64_t> released;
  std::optional<grant> new_grant;
  grant_hook granted;
  {
    std::lock_guard lk(mu_);
    auto it = held_.find(id);
    still_held = it != held_.end() && it->second.outcome == "pending";
    // Only a permanent approval has done something (its overlay) that cannot be taken back.
    if (!still_held && !(d.approve && d.scope == scope::permanent)) return false;
    if (still_held) {
      released.push_back(id);
      entry& e = it->second;
      e.outcome = d.approve ? "approved" : "refused";
      e.forget_at = steady::now() + keep_outcome_;
      auto outcome = d.approve
                         ? verdict::next()
                         : verdict::refuse(core::errc::approval_refused,
                                           core::str_cat("approval ", id, " refused by ", d.by));
      if (e.request.access_request) {
        // Kept for its agent to poll.
      } else if (!e.started) {
        e.early = std::move(outcome);  // start() delivers it
      } else {
        calls.push_back(
            [done = std::move(e.done), v = std::move(outcome)]() mutable { done(std::move(v)); });
        held_.erase(it);
      }
    }
    // An access request approved `once` arrives here as agent_host (decide).
    if (d.approve && d.scope != scope::once) {
      grant g;
      g.id = id;
      g.agent = r.agent;
      g.host = r.host;
      g.port = r.port;
      if (d.same_method && !r.connect && !r.access_request) g.method = r.method;
      if (!r.connect && !r.access_request) g.path_prefix = d.path_prefix;
      g.expires = d.scope == scope::permanent ? sys_clock::time_point::max()
                                              : sys_clock::now() + d.duration;
      g.by = d.by;
      new_grant = g;
      granted = fleet_granted_;
      store_grant(std::move(g), calls, released);
    }
  }
  for (auto& c : calls)
    c();
  for (auto n : released)
    tell_fleet(n, nullptr, {});
  if (new_grant && granted) granted(*new_grant);
  return true;
}

void registry::note_overlay_change(std::string diff) {
  std::lock_guard lk(mu_);
  overlay_diff_ = std::move(diff);
}

std::size_t registry::held_count() {
  std::lock_guard lk(mu_);
  return static_cast<std::size_t>(std::count_if(
      held_.begin(), held_.end(), [](const auto& kv) { return kv.second.outcome == "pending"; }));
}

}  // namespace airlock::filters::approval
