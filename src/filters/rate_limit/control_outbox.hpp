#pragma once
// The fleet control messages (a stop, a resume, a breaker trip) this replica has sent and the
// shared store has not accepted yet (state: redis). A message is recorded before it is sent and
// forgotten only once Redis has answered both its write (the stopped set, the suspension key)
// and its PUBLISH; one sent while the store is unavailable stays here and is sent again when
// the store comes back (shared_store::send_pending, on every reconnect and every second), so a
// stop issued during an outage reaches the fleet afterwards instead of never.
//
// One message per agent and kind is kept, the latest: a stop and a resume replace each other
// (the operator's last word is what the fleet must hear), a resume drops a pending trip (it
// lifts the suspension too), and a trip is kept until its cool-down ends. The outbox lives in
// memory: a replica that restarts before the store is back forgets it (and its own stop with it).
//
// It also remembers when each agent was last resumed (here or by a message from the fleet), so
// that a read of the stored stops issued before a resume does not stop the agent again when
// its answer comes after the resume (fleet_control::target::sync).
//
// @par Thread Safety
// Every member function may be called from any thread (a mutex).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::filters::rate_limit {

class control_outbox {
 public:
  struct message {
    enum class kind : std::uint8_t { stop, resume, trip };
    std::string agent;
    kind what = kind::stop;
    std::int64_t until_ns = 0;  // trip: when the suspension ends (steady clock)
    std::uint64_t seq = 0;      // which recording this is (a newer one supersedes it)
  };

  // Records a stop (or a resume) of `agent`, replacing what was pending for it.
  message put_control(std::string_view agent, bool stop);
  // Records a trip of `agent` until `until_ns`.
  message put_trip(std::string_view agent, std::int64_t until_ns);
  // The store accepted `m`: forgotten, unless a newer message for the same agent replaced it.
  void delivered(const message& m);
  // What is still to be sent, oldest first; trips whose cool-down has ended are dropped.
  std::vector<message> pending(std::int64_t now_ns);
  std::size_t size() const;

  // A resume heard from the fleet (an agent of the policy).
  void note_resume(std::string_view agent);
  // A point in the sequence of resumes, for resumed_since().
  std::uint64_t mark() const;
  // Whether `agent` was resumed after `mark`, or has a resume waiting to be sent.
  bool resumed_since(std::string_view agent, std::uint64_t mark) const;

 private:
  struct slot {
    std::optional<message> control;  // a stop or a resume
    std::optional<message> trip;
    std::uint64_t resumed_at = 0;
  };
  mutable std::mutex mutex_;
  std::uint64_t seq_ = 0;
  std::map<std::string, slot, std::less<>> agents_;

  slot& slot_of(std::string_view agent);  // with mutex_ held
};

}  // namespace airlock::filters::rate_limit
