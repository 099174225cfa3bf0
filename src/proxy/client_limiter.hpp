#pragma once
// Caps on client connections: one for the whole proxy and one per client source address.
// Touched once per accepted and once per closed connection (not per request or byte).
//
// Thread safety: all member functions may be called from any thread.

#include <boost/asio/ip/address.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace airlock::proxy {

class client_limiter {
 public:
  // Counts the connection and returns true when it fits under both caps; otherwise counts
  // nothing and returns false.
  bool try_acquire(const boost::asio::ip::address& client, std::uint32_t max_total,
                   std::uint32_t max_per_client);
  void release(const boost::asio::ip::address& client);
  std::uint32_t total() const noexcept { return total_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> total_{0};
  std::mutex mutex_;
  std::unordered_map<boost::asio::ip::address, std::uint32_t> per_client_;
};

// Releases on destruction (RAII for a session's slot).
class client_slot {
 public:
  client_slot(client_limiter& l, boost::asio::ip::address a) : limiter_(&l), address_(a) {}
  ~client_slot() { limiter_->release(address_); }
  client_slot(const client_slot&) = delete;
  client_slot& operator=(const client_slot&) = delete;

 private:
  client_limiter* limiter_;
  boost::asio::ip::address address_;
};

}  // namespace airlock::proxy
