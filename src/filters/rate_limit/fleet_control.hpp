#pragma once
// The kill switch and the circuit breaker for the fleet (state: redis). A stop, a resume or a
// breaker trip on one replica is stored in Redis and published (shared_store::publish_*); every
// replica subscribes to the control channel and applies what it hears to its own registry, so
// it takes effect everywhere within one pub/sub delivery (milliseconds). A replica reads the
// stored state (the stopped set and each agent's suspension, the PTTL of its key) when it
// starts, when its store connection comes back, each time its subscription is confirmed (a
// message published while the pub/sub connection was down is lost) and every sync_interval, so
// that a lost message is made up for within that.
//
// Failures are counted per replica (a failure costs no round trip); a trip is what is shared.
// Concurrency caps stay per replica. A sync only adds stops and suspensions, never lifts one:
// a resume missed while a replica was cut off leaves the agent stopped there (fail closed)
// until the next resume.
//
// @par Thread Safety
// Messages and syncs run on the store client's thread; the registry is thread-safe.

#include "filters/rate_limit/registry.hpp"
#include "filters/rate_limit/shared_store.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>

namespace airlock::filters::rate_limit {

class fleet_control {
 public:
  // `store` must outlive this object; `rates` only this object (callbacks that come later find
  // it gone and do nothing).
  fleet_control(shared_store& store, registry& rates);
  ~fleet_control();
  fleet_control(const fleet_control&) = delete;
  fleet_control& operator=(const fleet_control&) = delete;

  static constexpr std::chrono::milliseconds sync_interval{1'000};

  // Subscribes and reads the stored state, waiting up to `wait` for that first read (so that
  // a restarted replica does not serve a stopped agent); later reads as said above. False when
  // the first read did not complete in time (the store is down: it runs when the store comes
  // back; until then shared_store::control_read() is false).
  bool start(std::chrono::milliseconds wait);

  // Applies one control message ("stop NAME", "resume NAME", "trip NAME MS"). Public for tests.
  void apply(std::string_view text);

  struct target;

 private:
  shared_store& store_;
  std::shared_ptr<target> target_;
};

}  // namespace airlock::filters::rate_limit
