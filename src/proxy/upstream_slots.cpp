// Upstream connections counted as the client's (upstream_slots.hpp).
#include "proxy/upstream_slots.hpp"

namespace airlock::proxy {

upstream_slot::~upstream_slot() {
  if (counted_)
    owner_->limiter_.release(owner_->client_);
  else
    owner_->own_free_ = true;
}

std::unique_ptr<upstream_slot> upstream_slots::take(std::uint32_t max_total,
                                                    std::uint32_t max_per_client) {
  if (own_free_) {
    own_free_ = false;
    return std::make_unique<upstream_slot>(shared_from_this(), false);
  }
  if (!limiter_.try_acquire(client_, max_total, max_per_client)) return nullptr;
  return std::make_unique<upstream_slot>(shared_from_this(), true);
}

}  // namespace airlock::proxy
