#include "filters/rate_limit/shared_store.hpp"

#include "core/log.hpp"
#include "core/steady_ns.hpp"
#include "core/str_cat.hpp"
#include "filters/rate_limit/rate_limits.hpp"
#include "filters/rate_limit/shared_scripts.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdio>

namespace airlock::filters::rate_limit {
namespace {

// The script's SHA-1 as EVALSHA wants it (lower-case hex).
std::string sha1_hex(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : digest) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

// Microseconds as the scripts take them; fractions kept (bytes at high rates).
std::string micros(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", ns / 1000.0);
  return buf;
}

double interval_ns(const gcra_params& p) {
  return static_cast<double>(p.interval_num_ns) / static_cast<double>(p.interval_den);
}

}  // namespace

bool lease::take() noexcept {
  std::int64_t n = units.load(std::memory_order_relaxed);
  while (n > 0)
    if (units.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return true;
  return false;
}

shared_store::shared_store(state::client_options options, store_settings settings)
    : settings_(std::move(settings)),
      acquire_sha_(sha1_hex(scripts::acquire)),
      refund_sha_(sha1_hex(scripts::refund)),
      charge_sha_(sha1_hex(scripts::charge)),
      stale_ns_(std::max<std::int64_t>(1'000'000'000, 2 * options.timeout.count() * 1'000'000)) {
  if (settings_.replicas == 0) settings_.replicas = 1;
  options.on_connected = [this] {
    // The client's thread may connect before the constructor has stored client_: the mutex
    // orders the two.
    std::function<void()> f;
    state::client* c = nullptr;
    {
      std::lock_guard lock(hook_mutex_);
      f = on_connected_;
      c = client_.get();
    }
    if (c == nullptr) return;  // being destroyed
    // First on every new connection, so that EVALSHA finds the scripts and a fire-and-forget
    // refund is not overtaken by the EVAL of a NOSCRIPT fallback (that fallback is left for a
    // command posted in the instant between "up" and this).
    for (std::string_view script : {scripts::acquire, scripts::refund, scripts::charge})
      c->command({"SCRIPT", "LOAD", std::string(script)}, [](state::reply) {});
    // Then what the fleet has not heard yet, before the fleet's state is read back (the hook):
    // the read must see the stops and resumes made here while the store was away.
    send_pending(*c);
    if (f) f();
  };
  std::lock_guard lock(hook_mutex_);
  client_ = std::make_unique<state::client>(std::move(options));
}

void shared_store::on_connected(std::function<void()> f) {
  {
    std::lock_guard lock(hook_mutex_);
    on_connected_ = std::move(f);
  }
  // Already connected: the hook would otherwise wait for the next reconnect.
  if (client_->up()) {
    std::function<void()> hook;
    {
      std::lock_guard lock(hook_mutex_);
      hook = on_connected_;
    }
    if (hook) hook();
  }
}

shared_store::~shared_store() {
  std::unique_ptr<state::client> c;
  {
    std::lock_guard lock(hook_mutex_);
    c = std::move(client_);
  }
  c.reset();  // joins the client's thread; a hook running meanwhile finds client_ null
}

bool shared_store::available() const noexcept {
  return client_->up();
}

std::string shared_store::bucket_key(std::string_view agent, std::string_view rule,
                                     std::string_view bucket) const {
  if (rule.empty()) return core::str_cat(settings_.key_prefix, "rl:", agent, ":", bucket);
  return core::str_cat(settings_.key_prefix, "rl:", agent, ":", rule, ":", bucket);
}

std::uint32_t shared_store::lease_batch(const gcra_params& p) const noexcept {
  if (!p.enabled()) return 1;
  const double burst = static_cast<double>(p.capacity_ns) / interval_ns(p);
  const double share = burst / (4.0 * settings_.replicas);
  return static_cast<std::uint32_t>(std::clamp(share, 1.0, 16.0));
}

void shared_store::eval(std::string_view script, const std::string& sha,
                        std::vector<std::string> args, state::client::callback done) {
  std::vector<std::string> cmd{"EVALSHA", sha};
  cmd.insert(cmd.end(), args.begin(), args.end());
  client_->command(std::move(cmd), [this, script, args = std::move(args),
                                    done = std::move(done)](state::reply r) mutable {
    if (r.what == state::reply::kind::error && r.text.rfind("NOSCRIPT", 0) == 0) {
      std::vector<std::string> full{"EVAL", std::string(script)};
      full.insert(full.end(), args.begin(), args.end());
      client_->command(std::move(full), std::move(done));
      return;
    }
    done(std::move(r));
  });
}

void shared_store::acquire(std::shared_ptr<lease> l, const gcra_params& p, std::uint32_t want,
                           std::int64_t now_ns, acquired done) {
  std::vector<std::string> args{"1", l->key, micros(interval_ns(p)),
                                micros(static_cast<double>(p.capacity_ns)),
                                std::to_string(std::max<std::uint32_t>(want, 1))};
  eval(scripts::acquire, acquire_sha_, std::move(args),
       [l, now_ns, want, done = std::move(done)](state::reply r) {
         // {granted, retry-after in microseconds}; anything else (a peer that is not this
         // script) is no answer: on_unavailable applies.
         if (r.what != state::reply::kind::array || r.elements.size() != 2 ||
             r.elements[0].what != state::reply::kind::integer ||
             r.elements[1].what != state::reply::kind::integer || r.elements[0].integer < 0 ||
             r.elements[0].integer > std::max<std::uint32_t>(want, 1)) {
           done(-1, 0);
           return;
         }
         const std::int64_t granted = r.elements[0].integer;
         const std::int64_t retry_ns = store_wait_ns(r.elements[1].integer, 1'000);
         if (granted > 0) {
           l->taken_at_ns.store(now_ns, std::memory_order_relaxed);
           l->units.fetch_add(granted, std::memory_order_relaxed);
         } else {
           l->empty_retry_ns.store(retry_ns, std::memory_order_relaxed);
           l->empty_until_ns.store(time_after(now_ns, retry_ns), std::memory_order_relaxed);
         }
         done(granted, retry_ns);
       });
}

void shared_store::expire(lease& l, const gcra_params& p, std::int64_t now_ns) {
  const std::int64_t at = l.taken_at_ns.load(std::memory_order_relaxed);
  if (now_ns - at < lease_ttl_ns || l.units.load(std::memory_order_relaxed) <= 0) return;
  const std::int64_t n = l.units.exchange(0, std::memory_order_relaxed);
  if (n <= 0) return;
  std::vector<std::string> args{"1", l.key, micros(interval_ns(p)), std::to_string(n)};
  // Fire and forget: a refund lost with the connection only makes the fleet stricter.
  eval(scripts::refund, refund_sha_, std::move(args), [](state::reply) {});
}

std::int64_t shared_store::flush_bytes(const gcra_params& p) const noexcept {
  if (!p.enabled()) return 1;
  const double quota = static_cast<double>(p.capacity_ns) / interval_ns(p);
  return static_cast<std::int64_t>(std::clamp(quota / (64.0 * settings_.replicas), 1.0, 65536.0));
}

void shared_store::note_bytes(const std::shared_ptr<byte_tally>& t, const gcra_params& p,
                              std::uint64_t bytes, std::int64_t now_ns) noexcept {
  const std::int64_t n =
      t->pending.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed) +
      static_cast<std::int64_t>(bytes);
  const std::int64_t at = t->synced_at_ns.load(std::memory_order_relaxed);
  if (n < flush_bytes(p) && time_between(at, now_ns) < sync_interval_ns) return;
  if (t->syncing.exchange(true, std::memory_order_relaxed)) return;  // one at a time
  try {
    sync_bytes(t, p, now_ns, [t](bool) { t->syncing.store(false, std::memory_order_relaxed); });
  } catch (...) {  // out of memory: the bytes stay pending for the next try
    t->syncing.store(false, std::memory_order_relaxed);
  }
}

void shared_store::sync_bytes(std::shared_ptr<byte_tally> t, const gcra_params& p,
                              std::int64_t now_ns, std::function<void(bool answered)> done) {
  const std::int64_t n = t->pending.exchange(0, std::memory_order_relaxed);
  const double cost_ns = static_cast<double>(n) * interval_ns(p);
  std::vector<std::string> args{"1", t->key, micros(cost_ns),
                                micros(static_cast<double>(p.capacity_ns))};
  eval(scripts::charge, charge_sha_, std::move(args),
       [t, n, now_ns, done = std::move(done)](state::reply r) {
         // The quota's debt in microseconds (0: room); a negative count is no answer.
         const bool answered = r.what == state::reply::kind::integer && r.integer >= 0;
         if (answered) {
           const std::int64_t wait_ns = store_wait_ns(r.integer, 1'000);
           t->exhausted_until_ns.store(wait_ns > 0 ? time_after(now_ns, wait_ns) : 0,
                                       std::memory_order_relaxed);
           t->synced_at_ns.store(now_ns, std::memory_order_relaxed);
         } else {
           t->pending.fetch_add(n, std::memory_order_relaxed);  // charged at the next try
         }
         if (done) done(answered);
       });
}

std::string shared_store::suspended_key(std::string_view agent) const {
  return core::str_cat(settings_.key_prefix, "suspended:", agent);
}

void shared_store::publish_stop(std::string_view agent, bool stop, std::function<void(bool)> done) {
  send(*client_, outbox_.put_control(agent, stop), false, std::move(done));
}

void shared_store::publish_trip(std::string_view agent, std::int64_t cooldown_ns) {
  send(*client_,
       outbox_.put_trip(agent, time_after(core::steady_now_ns(),
                                          std::max<std::int64_t>(cooldown_ns, 1'000'000))),
       false, {});
}

void shared_store::send_pending() {
  send_pending(*client_);
}

void shared_store::send_pending(state::client& c) {
  for (control_outbox::message& m : outbox_.pending(core::steady_now_ns()))
    send(c, std::move(m), true, {});
}

void shared_store::send(state::client& c, control_outbox::message m, bool late,
                        std::function<void(bool)> done) {
  using kind = control_outbox::message::kind;
  std::vector<std::vector<std::string>> cmds;
  std::string text;
  if (m.what == kind::stop) {
    cmds.push_back({"SADD", stopped_key(), m.agent});
    text = core::str_cat("stop ", m.agent);
  } else if (m.what == kind::resume) {
    cmds.push_back({"SREM", stopped_key(), m.agent});
    cmds.push_back({"DEL", suspended_key(m.agent)});
    text = core::str_cat("resume ", m.agent);
  } else {
    // What is left of the cool-down (a late trip suspends the others for the rest of it).
    const std::int64_t ms =
        std::max<std::int64_t>(time_between(core::steady_now_ns(), m.until_ns) / 1'000'000, 1);
    cmds.push_back({"SET", suspended_key(m.agent), "1", "PX", std::to_string(ms)});
    text = core::str_cat("trip ", m.agent, " ", ms);
  }
  // A connection answers in order: the stored state changes before the others hear of it.
  cmds.push_back({"PUBLISH", control_channel(), std::move(text)});
  // Answers come on the client's thread, or at once on this one when the store is down: the
  // last one decides whether all were accepted.
  struct tally {
    std::atomic<int> left;
    std::atomic<bool> ok{true};
  };
  auto t = std::make_shared<tally>();
  t->left.store(static_cast<int>(cmds.size()));
  auto sent = std::make_shared<control_outbox::message>(std::move(m));
  for (auto& cmd : cmds)
    c.command(std::move(cmd), [this, t, sent, late, done](state::reply r) {
      if (!r.ok()) t->ok.store(false);
      if (t->left.fetch_sub(1) != 1) return;
      const bool ok = t->ok.load();
      if (ok) {
        outbox_.delivered(*sent);
        if (late)
          AIRLOCK_LOG(warn, "state", "agent ", sent->agent, " ",
                      sent->what == kind::stop     ? "stop"
                      : sent->what == kind::resume ? "resume"
                                                   : "breaker trip",
                      " sent to the fleet (kept while the store was unavailable)");
      }
      if (done) done(ok);
    });
}

}  // namespace airlock::filters::rate_limit
