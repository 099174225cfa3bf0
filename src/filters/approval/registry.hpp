#pragma once
// The approvals of one proxy: the requests held for an operator's decision (filters::pending
// waits the sessions await), the agents' own access requests (request-access), and the grants
// operators gave (`agent_host` for a while). One per proxy, owned by the server; it outlives
// policy snapshots, so a reload neither drops a held request nor forgets a grant.
//
// Decisions come from the admin port (GET /approvals, POST /approvals/ID/approve|refuse). A
// `permanent` approval is written as a rule to the policy's overlay file (approvals.overlay)
// by the writer the server installs, which then reloads the policy.
//
// Bounds: a hold is refused at once (approval_limit) past max_held_per_agent for its agent or
// max_held_total for the proxy, so an agent cannot exhaust the proxy by asking.
//
// The kill switch: stop_agent() ends what an agent has pending (agent_stopped), and a held
// request's session checks the stop again when it takes its verdict (pending::settle), so an
// approval that crossed the stop lets nothing out.
//
// @par Thread Safety
// Every member may be called from any thread (one mutex). The sessions' callbacks are called
// outside the lock.

#include "filters/filter.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::approval {

// What is asked for: names and the target, never a header or body value. The target is as the
// exchange's record shows it: what DLP found in the host, method or path is replaced there
// ([REDACTED:dlp]), so no listing, record or fleet message carries it.
struct request_info {
  std::string agent;
  std::string host;
  std::uint16_t port = 0;
  std::string method;  // "CONNECT" for a tunnel
  std::string path;    // empty for a CONNECT
  bool connect = false;
  bool in_tunnel = false;
  std::string rule;    // the rule that asked (`ask`), or empty (approvals.ask_unmatched)
  std::string reason;  // an agent's access request: its own words (untrusted, bounded)
  bool access_request = false;
  // DLP replaced the host or the method: no grant covers the request (one made from it would
  // stand for every target redacted the same), and no permanent rule is written for it.
  bool redacted = false;
};

enum class scope : std::uint8_t { once, agent_host, permanent };
std::optional<scope> parse_scope(std::string_view text);
std::string_view scope_name(scope s);
// The scope a decision has: an access request names a host, not one request, so approving it
// `once` grants the host for the decision's duration, as agent_host does, and is answered and
// recorded as agent_host.
scope effective_scope(const request_info& r, scope asked);

struct bounds {
  std::uint32_t per_agent = 8;
  std::uint32_t total = 256;
};

// Whether `path` is under `prefix` (a grant's path_prefix): whole segments ("/v1" covers "/v1"
// and "/v1/x", not "/v10"; "/v1/" covers "/v1/x", not "/v1"), and never a path with dot
// segments or an encoded slash or backslash, which a server would resolve elsewhere.
bool path_under_prefix(std::string_view path, std::string_view prefix) noexcept;

// A grant for one agent to one host and port, optionally one method and a path prefix.
struct grant {
  std::uint64_t id = 0;
  std::string agent;
  std::string host;
  std::uint16_t port = 0;
  std::string method;       // empty: any
  std::string path_prefix;  // empty: any
  std::chrono::system_clock::time_point expires;
  std::string by;  // who approved
  bool covers(const request_info& r, std::chrono::system_clock::time_point now) const;
};

// An operator's decision.
struct decision {
  bool approve = false;
  approval::scope scope = approval::scope::once;
  std::chrono::milliseconds duration{3'600'000};  // agent_host
  bool same_method = false;                       // agent_host: only the held method
  std::string path_prefix;                        // agent_host: only under this path
  std::string by;                                 // who decided (the audit's `by`)
};

class registry {
 public:
  // Writes a rule allowing `r` to the overlay file and reloads; false with the reason when it
  // cannot. Installed by the server (it knows the files and how to reload).
  using permanent_writer =
      std::function<bool(const request_info& r, bool same_method, std::string& message)>;
  // Called for every operator decision and every hold's end, for the audit trail.
  using event_sink =
      std::function<void(std::string_view event, std::uint64_t id, const request_info& r,
                         std::string_view outcome, std::string_view by)>;

  registry() = default;
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  // The fleet's view of this registry (fleet.hpp, state: redis): `held` is told when a hold
  // or an access request begins (`r` set, with its timeout) and when it leaves the pending
  // list (`r` null); `granted` of every grant a decision made here. Called outside the lock.
  using hold_hook = std::function<void(std::uint64_t id, const request_info* r,
                                       std::chrono::milliseconds timeout)>;
  using grant_hook = std::function<void(const grant& g)>;
  // Told when a stop revoked an agent's grants (fleet: the grants kept in the store go too).
  using revoke_hook = std::function<void(const std::string& agent)>;

  // Whether the kill switch has stopped an agent (the server asks its rate-limit registry).
  using stop_check = std::function<bool(std::string_view agent)>;

  void set_permanent_writer(permanent_writer w);
  void set_event_sink(event_sink s);
  void set_fleet_hooks(hold_hook held, grant_hook granted);
  void set_revoke_hook(revoke_hook revoked);
  void set_stop_check(stop_check stopped);

  // The kill switch stopped `agent` (here, or on another replica): each of its held requests
  // is refused with agent_stopped and each access request ends refused, each with one
  // `agent_stopped` event, and its grants are revoked (a resume starts from the policy).
  // Returns how many held requests and access requests ended.
  std::size_t stop_agent(std::string_view agent);
  // Whether the stop check says `agent` is stopped (false without one).
  bool agent_stopped(std::string_view agent);

  // A grant decided on another replica: kept and applied (it releases the held requests it
  // covers) as if decided here, without telling the fleet again; dropped while its agent is
  // stopped (a decision that crossed the stop).
  void add_grant(grant g);

  // Ends the access requests whose timeout passed, one `timed_out` record each, without
  // waiting for someone to look (the proxy calls it every second).
  void sweep();

  // Whether a grant covers the request (expired grants are dropped here).
  bool granted(const request_info& r);

  // Holds a request: the pending its session awaits, or null with `why` set (approval_limit)
  // when over `b`. The hold ends with the operator's decision, or with approval_timeout after
  // `timeout` (the session's wait, see pending::wait_limit).
  std::shared_ptr<pending> hold(request_info r, const bounds& b, std::chrono::milliseconds timeout,
                                std::string& why);

  // An agent's own access request: no session waits; the outcome is kept for polling (for
  // `keep` after it is decided or times out). 0 with `why` set when over `b`.
  std::uint64_t ask(request_info r, const bounds& b, std::chrono::milliseconds timeout,
                    std::string& why);
  // "pending", "approved", "refused", "timed_out", or empty when there is no such request of
  // this agent (another agent's id reads as unknown).
  std::string access_outcome(std::uint64_t id, std::string_view agent);

  // Applies an operator's decision to a held request or access request. False when there is
  // no such pending id (already decided, timed out, or never held), or the decision cannot be
  // applied (a permanent approval whose file cannot be written); `message` says what happened.
  // A permanent approval whose rule was written and loaded is in force: true, even when the
  // request itself ended meanwhile (its timeout, its client gone, a stop), as `message` says.
  // `target`, when given, receives what was (or was to be) decided, for the audit trail.
  bool decide(std::uint64_t id, const decision& d, std::string& message,
              request_info* target = nullptr);

  // Pending holds and access requests, active grants, and the last overlay change (JSON).
  std::string json();
  // The last permanent approval's change to the overlay file (a unified-diff-like text).
  void note_overlay_change(std::string diff);

  // Refuses every held request (the proxy is stopping), and records each access request still
  // pending (`shutting_down`, or `timed_out` past its deadline); no callback runs afterwards.
  void shutdown();

  std::size_t held_count();

 private:
  // A decided access request is kept this long for the agent to poll its outcome.
  static constexpr std::chrono::minutes keep_outcome_{10};
  struct entry {
    request_info request;
    std::chrono::system_clock::time_point since;
    std::chrono::steady_clock::time_point deadline;
    std::function<void(verdict)> done;  // the session waiting, if any (and not yet answered)
    bool started = false;
    // Decided before its session began to wait (the listing shows a hold as soon as it is
    // made): start() delivers this.
    std::optional<verdict> early;
    std::string outcome = "pending";  // access requests: kept after the decision
    std::chrono::steady_clock::time_point forget_at;
  };
  friend class held_wait_access;
  void start(std::uint64_t id, std::function<void(verdict)> done);
  // The session stopped waiting: the hold timed out, or (client_gone) its client closed the
  // connection. Either way it leaves the pending list.
  void cancel(std::uint64_t id, bool client_gone);
  bool admit(const request_info& r, const bounds& b, std::string& why);  // under mu_
  // Forgets what expired and keeps `r` pending when the bounds admit it: its id, or 0 (`why`
  // says why). Takes mu_.
  std::uint64_t enter(const request_info& r, const bounds& b, std::chrono::milliseconds timeout,
                      std::string& why);
  // An access request whose timeout passed: recorded (report_timed_out) outside the lock.
  struct timed_out_access {
    std::uint64_t id = 0;
    request_info request;
  };
  // Under mu_: forgets what has been kept long enough, and returns the access requests whose
  // timeout passed just now, for report_timed_out() once the lock is released.
  [[nodiscard]] std::vector<timed_out_access> expire();
  void report_timed_out(const std::vector<timed_out_access>& ended);
  std::string json_locked() const;  // json() under mu_
  // A hold or access request begun for an agent the kill switch stopped meanwhile (after the
  // rate-limit filter let it on, before it was listed) is ended at once.
  void end_if_stopped(std::string_view agent);
  // Keeps a new grant and releases every held request it covers (`calls` run outside the
  // lock; `released` are the ids that left the pending list). Under mu_.
  void store_grant(grant g, std::vector<std::function<void()>>& calls,
                   std::vector<std::uint64_t>& released);
  // decide()'s second half, once any overlay is written: delivers the outcome to the held
  // request if it is still pending (`still_held`) and keeps the grant the decision makes.
  // False when the request ended meanwhile and nothing was applied (all but permanent).
  bool apply_decision(std::uint64_t id, const request_info& r, const decision& d, bool& still_held);
  void tell_fleet(std::uint64_t id, const request_info* r, std::chrono::milliseconds timeout);
  void emit(std::string_view event, std::uint64_t id, const request_info& r,
            std::string_view outcome, std::string_view by);

  std::mutex mu_;
  std::map<std::uint64_t, entry> held_;
  std::vector<grant> grants_;
  std::uint64_t next_id_ = 1;
  std::string overlay_diff_;
  bool stopped_ = false;
  permanent_writer permanent_;
  event_sink events_;
  hold_hook fleet_held_;
  grant_hook fleet_granted_;
  revoke_hook fleet_revoked_;
  stop_check stopped_agent_;
};

}  // namespace airlock::filters::approval
