#pragma once
// Approvals across replicas (state: redis): a request held on one replica is listed and decided
// from any replica's admin port (and so its console), through the store the replicas share.
//
// - Listing: each hold and access request is added to one sorted set,
//   <prefix>approvals:held, scored by its deadline (unix ms) and removed when it leaves the
//   pending list (decided, timed out, client gone, released by a grant); an entry whose replica
//   died leaves the listing at its deadline. GET /approvals on any replica shows its own
//   pending list as before and adds the others' entries with replica-qualified ids ("r2:7").
// - Deciding: POST /approvals/r2:7/approve on another replica publishes the decision on r2's
//   channel (<prefix>approvals:to:r2); r2 applies it through registry::decide and answers on
//   the decider's channel. The decider waits for that answer (answer_timeout).
// - Grants: every grant a decision makes is published on <prefix>approvals:grants; every other
//   replica adds it to its own registry, with the same expiry. It is also kept in
//   <prefix>approvals:grants:kept (scored by its expiry) and every replica reads that at start
//   and every sync_interval, with its own holds added to the listing again, so that a replica
//   that started later, was cut off, or a Redis that restarted without persistence catch up.
//
// Fail closed: a store that does not answer approves nothing (the decider answers 503 or 504);
// a message that does not decode is dropped and counted (fleet_message.hpp). Whoever can
// publish on the store can decide: the store must be as closed as the admin port (see
// docs/operations.md, "Shared state").
//
// @par Thread Safety
// Every member may be called from any thread. Decisions and grants from the store are applied
// on a thread of this object's own (a permanent approval reloads the policy: never on the
// store client's thread). The registry must outlive this object; the client too.

#include "filters/approval/fleet_message.hpp"
#include "filters/approval/registry.hpp"
#include "state/client.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace airlock::filters::approval {

struct fleet_options {
  std::string replica;     // this replica's name (fleet_msg::valid_replica)
  std::string key_prefix;  // the store's key prefix (state.key_prefix)
  // GET /approvals waits this long at most for the other replicas' entries.
  std::chrono::milliseconds store_timeout{250};
  // A decision sent to another replica waits this long at most for its answer.
  std::chrono::milliseconds answer_timeout{2'000};
  // How often a replica adds its holds to the listing again and reads the kept grants.
  std::chrono::milliseconds sync_interval{2'000};
};

class fleet {
 public:
  fleet(state::client& store, registry& approvals, fleet_options options);
  ~fleet();  // unhooks from the registry, withdraws this replica's entries, joins its thread
  fleet(const fleet&) = delete;
  fleet& operator=(const fleet&) = delete;

  // Subscribes to this replica's channel and the grants channel, and hooks into the registry.
  void start();

  // AIRLOCK_REPLICA when set (made valid), else <hostname>-<pid>.
  static std::string default_replica();
  const std::string& replica() const noexcept;

  // GET /approvals: registry::json() with `replica` (this one's name), `fleet` ("ok" or
  // "unavailable": the store did not answer in store_timeout; the other replicas' entries are
  // missing then) and the other replicas' pending entries added to `pending`.
  std::string json();

  // Sends `d` to the replica holding `q`; `done` gets the answer exactly once: 200, 404 (no such
  // pending request, or no such replica listening), 409 (the holder could not apply it), 503
  // (the store is unavailable, or this object went away first), 504 (no answer in
  // answer_timeout: the holder may still apply it). It is called on the store client's thread
  // or on this object's, or before this returns when the store is down: never blocks the
  // caller (the admin listener serves probes and scrapes meanwhile).
  void decide_remote(const fleet_msg::qualified_id& q, const decision& d,
                     std::function<void(fleet_msg::ack)> done);
  // The same, waiting for the answer (at most answer_timeout and a little).
  fleet_msg::ack decide_remote(const fleet_msg::qualified_id& q, const decision& d);

  // Messages from the store dropped because they did not decode.
  std::uint64_t malformed() const noexcept;

  struct shared;

 private:
  std::shared_ptr<shared> shared_;
  std::thread worker_;
};

}  // namespace airlock::filters::approval
