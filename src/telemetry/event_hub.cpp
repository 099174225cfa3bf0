#include "telemetry/event_hub.hpp"

#include <algorithm>
#include <utility>

namespace airlock::telemetry {

std::uint64_t event_hub::subscription::take(std::vector<std::string>& out) {
  std::lock_guard lk(mu_);
  for (auto& e : queue_)
    out.push_back(std::move(e));
  queue_.clear();
  return std::exchange(lost_, 0);
}

std::shared_ptr<event_hub::subscription> event_hub::subscribe() {
  std::lock_guard lk(mu_);
  std::erase_if(subs_, [](const auto& w) { return w.expired(); });
  if (subs_.size() >= max_subscribers_) {
    count_.store(subs_.size(), std::memory_order_relaxed);
    return nullptr;
  }
  auto s = std::make_shared<subscription>();
  s->limit_ = queue_;
  subs_.push_back(s);
  count_.store(subs_.size(), std::memory_order_relaxed);
  return s;
}

void event_hub::publish(std::string_view line) noexcept {
  if (!has_subscribers()) return;
  while (!line.empty() && line.back() == '\n')
    line.remove_suffix(1);
  try {
    std::vector<std::shared_ptr<subscription>> live;
    {
      std::lock_guard lk(mu_);
      std::erase_if(subs_, [](const auto& w) { return w.expired(); });
      count_.store(subs_.size(), std::memory_order_relaxed);
      for (const auto& w : subs_)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (const auto& s : live) {
      std::lock_guard lk(s->mu_);
      if (s->queue_.size() >= s->limit_) {
        ++s->lost_;
        continue;
      }
      s->queue_.emplace_back(line);
    }
  } catch (...) {
    // Out of memory: a live view loses an event, the proxy goes on.
  }
}

}  // namespace airlock::telemetry
