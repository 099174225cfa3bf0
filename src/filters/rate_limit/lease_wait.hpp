#pragma once
// The rate-limit filter's `wait` (filter.hpp: pending) under state: redis: this replica's lease
// on a shared bucket is empty, so a small batch is leased from the store (or what it knows of a
// shared byte quota is stale, so the store is asked), then the quotas and buckets are taken
// again (plan::take_tokens). At most a few rounds (one per bucket of the
// admission); a store that does not answer applies on_unavailable rather than hanging (the
// client bounds every command by state.timeout_ms).
//
// @par Thread Safety
// start() from the session; the outcome comes on the store client's thread.

#include "filters/filter.hpp"
#include "filters/rate_limit/plan.hpp"

#include <memory>

namespace airlock::filters::rate_limit {

class lease_wait final : public pending, public std::enable_shared_from_this<lease_wait> {
 public:
  lease_wait(std::shared_ptr<const plan> rates, std::size_t agent, std::size_t rule,
             const admission& first);
  void start(std::function<void(verdict)> done) override;

 private:
  void round(const admission& a);
  void answered(bool store_answered);

  std::shared_ptr<const plan> rates_;
  std::size_t agent_;
  std::size_t rule_;
  admission first_;  // only its refill and sync (the caller keeps the slots)
  int rounds_ = 0;
  std::function<void(verdict)> done_;
};

// The filter's verdict for an admission that is not admitted (nor waiting): the kill switch,
// an internal error and an unavailable store hold even under report mode.
verdict refusal_verdict(const admission& a);

}  // namespace airlock::filters::rate_limit
