#pragma once
// The rate limits' side of the shared store (policy `state: redis`): buckets kept in Redis by
// the scripts of shared_scripts.hpp, and the leases this replica holds on them.
//
// Leasing keeps the per-request cost low: a replica takes a small batch of units at once
// (lease_batch) and admits from it locally with one atomic decrement; only an empty lease costs
// a round trip (the filter's `wait`). Units left unused are given back (refund) when the lease
// is older than lease_ttl, so an idle replica does not sit on the fleet's units. Because a unit
// is taken from the shared bucket before it is used, the fleet never admits more than the
// shared bucket grants; what leasing adds is lateness: a unit granted at t may be used until
// t + lease_ttl. See docs/operations.md ("Shared state") for the worst case.
//
// @par Thread Safety
// Every member function may be called from any thread; callbacks run on the client's thread.

#include "filters/rate_limit/control_outbox.hpp"
#include "filters/rate_limit/gcra.hpp"
#include "state/client.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace airlock::filters::rate_limit {

// Units this replica has taken from one shared bucket and not used yet.
struct lease {
  explicit lease(std::string k) : key(std::move(k)) {}
  const std::string key;  // the Redis key of the bucket
  std::atomic<std::int64_t> units{0};
  std::atomic<std::int64_t> taken_at_ns{0};  // steady clock; when the units were leased
  // After the store refused (the bucket is empty): refuse locally until then, without asking.
  std::atomic<std::int64_t> empty_until_ns{0};
  std::atomic<std::int64_t> empty_retry_ns{0};  // the store's retry-after at that refusal

  // Takes one unit; false when none is left.
  bool take() noexcept;
  void give_back() noexcept { units.fetch_add(1, std::memory_order_relaxed); }
};

// Bytes this replica has counted against one shared byte quota (bytes_per_hour) and not yet
// charged to the store, and what the store last said of that quota. Bytes are charged after the
// fact, as the local quota does (gcra::charge): the relay counts them here (lock-free) and the
// store is told in batches (flush_bytes) or at the next admission, whichever comes first.
struct byte_tally {
  explicit byte_tally(std::string k) : key(std::move(k)) {}
  const std::string key;  // the Redis key of the quota
  std::atomic<std::int64_t> pending{0};
  // Steady clock: the fleet's quota has no room until then (0: it had room).
  std::atomic<std::int64_t> exhausted_until_ns{0};
  // Steady clock: when the store's answer was asked for; never yet: the oldest time.
  std::atomic<std::int64_t> synced_at_ns{std::numeric_limits<std::int64_t>::min()};
  std::atomic<bool> syncing{false};  // a background charge is on its way
};

struct store_settings {
  std::string key_prefix = "airlock:";
  std::uint32_t replicas = 1;
  bool deny_when_unavailable = false;  // on_unavailable: deny
};

class shared_store {
 public:
  static constexpr std::int64_t lease_ttl_ns = 1'000'000'000;

  // Makes and owns the client (connecting in the background): destroying the store joins the
  // client's thread first, so no callback runs on a store that is gone.
  shared_store(state::client_options options, store_settings settings);
  ~shared_store();

  // Called on the client's thread each time the store connection comes up (fleet_control reads
  // the fleet's stops and suspensions then). Set once, before the first connection matters.
  void on_connected(std::function<void()> f);

  bool available() const noexcept;
  const store_settings& settings() const noexcept { return settings_; }
  state::client& client() noexcept { return *client_; }

  // The key of one bucket: <prefix>rl:<agent>:<bucket> or <prefix>rl:<agent>:<rule>:<bucket>.
  std::string bucket_key(std::string_view agent, std::string_view rule,
                         std::string_view bucket) const;

  // How many units to lease at once for a bucket: a quarter of the burst shared by the
  // replicas, between 1 and 16.
  std::uint32_t lease_batch(const gcra_params& p) const noexcept;

  // Leases up to `want` units into `l`. `done(granted, retry_after_ns)`: granted > 0 were added
  // to the lease; 0: the bucket is empty for retry_after_ns (also noted in the lease); -1: the
  // store did not answer.
  using acquired = std::function<void(std::int64_t granted, std::int64_t retry_after_ns)>;
  void acquire(std::shared_ptr<lease> l, const gcra_params& p, std::uint32_t want,
               std::int64_t now_ns, acquired done);
  // Gives back a lease older than lease_ttl (its units, to the shared bucket). Cheap when not.
  void expire(lease& l, const gcra_params& p, std::int64_t now_ns);

  // Shared byte quotas. An admission trusts what the store said of a quota for stale_ns (the
  // longer of 1 s and twice the timeout, so that an answer that came in time is never stale);
  // older knowledge is refreshed first (the filter's wait: sync_bytes), newer knowledge in the
  // background every sync_interval_ns while requests come.
  static constexpr std::int64_t sync_interval_ns = 200'000'000;
  std::int64_t stale_ns() const noexcept { return stale_ns_; }
  // Bytes counted before the store is told without waiting for an admission: 1/64 of the quota
  // shared by the replicas, between 1 and 64 KiB.
  std::int64_t flush_bytes(const gcra_params& p) const noexcept;
  // Counts `bytes` against the quota (from the relay, once per chunk) and tells the store in the
  // background when flush_bytes have gathered or sync_interval_ns has passed. Never throws.
  void note_bytes(const std::shared_ptr<byte_tally>& t, const gcra_params& p, std::uint64_t bytes,
                  std::int64_t now_ns) noexcept;
  // Charges what is pending and reads the quota's state into `t`. `done(answered)` (may be
  // empty); unanswered, the pending bytes are kept for the next try.
  void sync_bytes(std::shared_ptr<byte_tally> t, const gcra_params& p, std::int64_t now_ns,
                  std::function<void(bool answered)> done);

  // The fleet's kill switch and breaker (fleet_control.hpp applies them on every replica):
  // stored (so that a restarted replica reads them), then published on control_channel().
  // The local effect is the caller's and immediate. The message goes through outbox(): kept
  // until Redis has answered its write and its PUBLISH, and sent again by send_pending() when it
  // could not be (the store unavailable). `done(delivered)` (may be empty) runs once: true when
  // Redis accepted it now, false when it waits in the outbox; at once when the store is down,
  // else on the client's thread within the timeout.
  void publish_stop(std::string_view agent, bool stop, std::function<void(bool)> done = {});
  void publish_trip(std::string_view agent, std::int64_t cooldown_ns);
  // Sends what the outbox holds (on every reconnect, before the fleet's read; and every tick
  // of fleet_control). A message that reaches the store late is logged.
  void send_pending();
  control_outbox& outbox() noexcept { return outbox_; }

  // Whether the fleet's stored stops have been read since start-up (fleet_control): until then a
  // replica under on_unavailable: deny refuses every agent (plan::admit). True for a store
  // without fleet control (tests).
  bool control_read() const noexcept { return control_read_.load(std::memory_order_relaxed); }
  void set_control_read(bool read) noexcept {
    control_read_.store(read, std::memory_order_relaxed);
  }

  std::string control_channel() const { return settings_.key_prefix + "control"; }
  std::string stopped_key() const { return settings_.key_prefix + "stopped"; }
  std::string suspended_key(std::string_view agent) const;

 private:
  // EVALSHA, and EVAL when the server does not know the script (NOSCRIPT: a restarted Redis).
  void eval(std::string_view script, const std::string& sha, std::vector<std::string> args,
            state::client::callback done);
  // Writes and publishes one outbox message; `late`: it was kept while the store was away.
  void send(state::client& c, control_outbox::message m, bool late, std::function<void(bool)> done);
  void send_pending(state::client& c);

  store_settings settings_;
  std::string acquire_sha_, refund_sha_, charge_sha_;
  std::int64_t stale_ns_ = 1'000'000'000;
  control_outbox outbox_;
  std::atomic<bool> control_read_{true};
  std::mutex hook_mutex_;
  std::function<void()> on_connected_;     // guarded by hook_mutex_
  std::unique_ptr<state::client> client_;  // last: destroyed (joined) first
};

}  // namespace airlock::filters::rate_limit
