#include "filters/rate_limit/fleet_control.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"

#include <charconv>
#include <future>
#include <memory>
#include <mutex>

namespace airlock::filters::rate_limit {

// What the store's callbacks reach: the registry while this object lives, nothing after.
struct fleet_control::target {
  std::mutex mutex;
  registry* rates = nullptr;  // guarded by mutex
  shared_store* store = nullptr;

  void apply(std::string_view text);
  void sync(const std::shared_ptr<target>& self, std::function<void()> done);
};

fleet_control::fleet_control(shared_store& store, registry& rates)
    : store_(store), target_(std::make_shared<target>()) {
  target_->rates = &rates;
  target_->store = &store;
}

fleet_control::~fleet_control() {
  store_.on_connected({});
  std::lock_guard lock(target_->mutex);
  target_->rates = nullptr;
}

bool fleet_control::start(std::chrono::milliseconds wait) {
  auto t = target_;
  store_.client().subscribe(store_.control_channel(),
                            [t](std::string_view, std::string_view text) { t->apply(text); });
  auto first = std::make_shared<std::promise<void>>();
  auto done = first->get_future();
  auto once = std::make_shared<std::once_flag>();
  store_.on_connected([t, first, once] {
    t->sync(t, [first, once] { std::call_once(*once, [&] { first->set_value(); }); });
  });
  return done.wait_for(wait) == std::future_status::ready;
}

void fleet_control::apply(std::string_view text) {
  target_->apply(text);
}

void fleet_control::target::apply(std::string_view text) {
  std::lock_guard lock(mutex);
  if (rates == nullptr) return;
  registry& rates_ = *rates;
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return;
  const std::string_view verb = text.substr(0, space);
  std::string_view rest = text.substr(space + 1);
  if (verb == "stop") {
    if (rates_.stop(rest)) AIRLOCK_LOG(warn, "policy", "agent ", rest, " stopped (fleet)");
  } else if (verb == "resume") {
    if (rates_.resume(rest)) AIRLOCK_LOG(warn, "policy", "agent ", rest, " resumed (fleet)");
  } else if (verb == "trip") {
    const auto sp = rest.rfind(' ');
    if (sp == std::string_view::npos) return;
    std::int64_t ms = 0;
    const std::string_view num = rest.substr(sp + 1);
    if (std::from_chars(num.data(), num.data() + num.size(), ms).ec != std::errc{} || ms <= 0)
      return;
    const std::string_view agent = rest.substr(0, sp);
    if (rates_.suspend(agent, core::steady_now_ns() + ms * 1'000'000))
      AIRLOCK_LOG(warn, "policy", "agent ", agent, " suspended for ", ms,
                  " ms (breaker tripped on another replica)");
  }
}

void fleet_control::target::sync(const std::shared_ptr<target>& self, std::function<void()> done) {
  std::shared_ptr<const plan> plan;
  {
    std::lock_guard lock(mutex);
    if (rates == nullptr) return;
    plan = rates->current();
  }
  // One count for the stopped set, one per agent's suspension; `done` when all are in.
  auto left =
      std::make_shared<std::atomic<int>>(1 + static_cast<int>(plan ? plan->agent_count() : 0));
  auto finished = std::make_shared<std::function<void()>>(std::move(done));
  const auto one_done = [left, finished] {
    if (left->fetch_sub(1) == 1) (*finished)();
  };
  store->client().command({"SMEMBERS", store->stopped_key()}, [self, one_done](state::reply r) {
    {
      std::lock_guard lock(self->mutex);
      for (const state::reply& name : r.elements)
        if (self->rates != nullptr && name.what == state::reply::kind::string &&
            self->rates->stop(name.text))
          AIRLOCK_LOG(warn, "policy", "agent ", name.text, " stopped (fleet, stored)");
    }
    one_done();
  });
  if (!plan) return;
  for (std::size_t i = 0; i < plan->agent_count(); ++i) {
    const std::string name = plan->agent_name(i);
    store->client().command(
        {"PTTL", store->suspended_key(name)}, [self, name, one_done](state::reply r) {
          {
            std::lock_guard lock(self->mutex);
            if (self->rates != nullptr && r.what == state::reply::kind::integer && r.integer > 0)
              self->rates->suspend(name, core::steady_now_ns() + r.integer * 1'000'000);
          }
          one_done();
        });
  }
}

}  // namespace airlock::filters::rate_limit
