#pragma once
// Live events for GET /events on the admin port (server-sent events, WHATWG HTML section
// 9.2): every audit line as it is written (exchanges, operators' actions, approvals) goes to
// each subscriber's own bounded queue. Publishing never blocks and never waits for a reader:
// a subscriber whose queue is full loses the event, and is told how many it lost with the next
// one it reads. The number of subscribers is bounded as well.
//
// Thread safety: every member may be called from any thread (one mutex, held for a copy).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::telemetry {

class event_hub {
 public:
  static constexpr std::size_t default_max_subscribers = 8;
  static constexpr std::size_t default_queue = 256;

  class subscription {
   public:
    // Moves the waiting events into `out` (one JSON object per element, without newline) and
    // returns how many were lost since the last call.
    std::uint64_t take(std::vector<std::string>& out);

   private:
    friend class event_hub;
    std::mutex mu_;
    std::deque<std::string> queue_;  // guarded by mu_
    std::uint64_t lost_ = 0;         // guarded by mu_
    std::size_t limit_ = default_queue;
  };

  explicit event_hub(std::size_t max_subscribers = default_max_subscribers,
                     std::size_t queue = default_queue)
      : max_subscribers_(max_subscribers), queue_(queue) {}

  // A new subscription, or null when max_subscribers are listening already. It ends when the
  // last shared_ptr to it goes.
  std::shared_ptr<subscription> subscribe();
  // Copies `line` (trailing newline removed) to every subscriber's queue. Cheap when nobody
  // listens (one atomic load).
  void publish(std::string_view line) noexcept;
  bool has_subscribers() const noexcept { return count_.load(std::memory_order_relaxed) > 0; }

 private:
  std::size_t max_subscribers_;
  std::size_t queue_;
  std::mutex mu_;
  std::vector<std::weak_ptr<subscription>> subs_;  // guarded by mu_
  std::atomic<std::size_t> count_{0};              // subs_ still alive, roughly
};

}  // namespace airlock::telemetry
