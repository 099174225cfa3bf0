#include "proxy/client_limiter.hpp"

namespace airlock::proxy {

bool client_limiter::try_acquire(const boost::asio::ip::address& client, std::uint32_t max_total,
                                 std::uint32_t max_per_client) {
  std::lock_guard lock(mutex_);
  if (total_.load(std::memory_order_relaxed) >= max_total) return false;
  auto& n = per_client_[client];
  if (n >= max_per_client) {
    if (n == 0) per_client_.erase(client);
    return false;
  }
  ++n;
  total_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void client_limiter::release(const boost::asio::ip::address& client) {
  std::lock_guard lock(mutex_);
  auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  if (--it->second == 0) per_client_.erase(it);
  total_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace airlock::proxy
