#include "filters/rate_limit/fleet_control.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"
#include "filters/rate_limit/rate_limits.hpp"

#include <atomic>
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
  // Reads the stored stops and suspensions; `done(complete)` once every answer is in,
  // `complete` when Redis answered them all.
  void sync(const std::shared_ptr<target>& self, std::function<void(bool complete)> done);
  bool gone() {
    std::lock_guard lock(mutex);
    return rates == nullptr;
  }
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
  // Until the first complete read, a replica under on_unavailable: deny serves nobody.
  store_.set_control_read(false);
  auto first = std::make_shared<std::promise<void>>();
  auto done = first->get_future();
  auto once = std::make_shared<std::once_flag>();
  shared_store* store = &store_;
  const auto read = [t, first, once, store] {
    t->sync(t, [first, once, store](bool complete) {
      if (!complete) return;
      std::call_once(*once, [&] {
        store->set_control_read(true);
        first->set_value();
      });
    });
  };
  // A message published while the pub/sub connection was down is lost: read the stored state
  // again each time the subscription is confirmed (at first and after every reconnect).
  store_.client().subscribe(
      store_.control_channel(), [t](std::string_view, std::string_view text) { t->apply(text); },
      read);
  store_.on_connected(read);
  // And every sync_interval whatever happened, so that nothing missed lasts longer than that;
  // what the fleet has not heard from this replica is sent again first.
  store_.client().every(sync_interval, [t, read, store] {
    if (t->gone()) return false;
    if (store->available()) {
      store->send_pending();
      read();
    }
    return true;
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
    if (rates_.resume(rest)) {
      store->outbox().note_resume(rest);
      AIRLOCK_LOG(warn, "policy", "agent ", rest, " resumed (fleet)");
    }
  } else if (verb == "trip") {
    const auto sp = rest.rfind(' ');
    if (sp == std::string_view::npos) return;
    std::int64_t ms = 0;
    const std::string_view num = rest.substr(sp + 1);
    if (std::from_chars(num.data(), num.data() + num.size(), ms).ec != std::errc{} || ms <= 0)
      return;
    const std::string_view agent = rest.substr(0, sp);
    // Clamped before it is scaled: a number past the cap (any client allowed to PUBLISH here
    // can send one) suspends for the cap, never overflows into "not suspended".
    const std::int64_t span = store_wait_ns(ms, 1'000'000);
    if (rates_.suspend(agent, time_after(core::steady_now_ns(), span)))
      AIRLOCK_LOG(warn, "policy", "agent ", agent, " suspended for ", span / 1'000'000,
                  " ms (breaker tripped on another replica)");
  }
}

void fleet_control::target::sync(const std::shared_ptr<target>& self,
                                 std::function<void(bool)> done) {
  std::shared_ptr<const plan> plan;
  {
    std::lock_guard lock(mutex);
    if (rates == nullptr) return;
    plan = rates->current();
  }
  // One count for the stopped set, one per agent's suspension; `done` when all are in.
  struct tally {
    std::atomic<int> left;
    std::atomic<bool> complete{true};
    std::function<void(bool)> done;
    // An agent resumed after this (here or by a message) is not stopped again by an answer
    // that Redis gave before the resume but that arrived after it.
    std::uint64_t mark = 0;
  };
  auto t = std::make_shared<tally>();
  t->left.store(1 + static_cast<int>(plan ? plan->agent_count() : 0));
  t->done = std::move(done);
  t->mark = store->outbox().mark();
  const auto one_done = [t](bool answered) {
    if (!answered) t->complete.store(false);
    if (t->left.fetch_sub(1) == 1) t->done(t->complete.load());
  };
  store->client().command({"SMEMBERS", store->stopped_key()}, [self, t, one_done](state::reply r) {
    {
      std::lock_guard lock(self->mutex);
      for (const state::reply& name : r.elements)
        if (self->rates != nullptr && name.what == state::reply::kind::string &&
            !self->store->outbox().resumed_since(name.text, t->mark) &&
            self->rates->stop(name.text))
          AIRLOCK_LOG(warn, "policy", "agent ", name.text, " stopped (fleet, stored)");
    }
    one_done(r.what == state::reply::kind::array);
  });
  if (!plan) return;
  for (std::size_t i = 0; i < plan->agent_count(); ++i) {
    const std::string name = plan->agent_name(i);
    store->client().command(
        {"PTTL", store->suspended_key(name)}, [self, t, name, one_done](state::reply r) {
          {
            std::lock_guard lock(self->mutex);
            if (self->rates != nullptr && r.what == state::reply::kind::integer && r.integer > 0 &&
                !self->store->outbox().resumed_since(name, t->mark))
              self->rates->suspend(
                  name, time_after(core::steady_now_ns(), store_wait_ns(r.integer, 1'000'000)));
          }
          one_done(r.what == state::reply::kind::integer);
        });
  }
}

}  // namespace airlock::filters::rate_limit
