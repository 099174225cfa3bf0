#include "filters/approval/fleet.hpp"

#include "filters/approval/fleet_shared.hpp"

#include "core/log.hpp"
#include "core/str_cat.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <unistd.h>

#include <future>

namespace airlock::filters::approval {
namespace {

namespace asio = boost::asio;

// A decision's outcome as an HTTP status, as admin_api.cpp answers a local one.
unsigned status_of(bool ok, const std::string& message) {
  if (ok) return 200;
  return message.starts_with("no pending approval") ? 404 : 409;
}

}  // namespace
void fleet::shared::held(std::uint64_t id, const request_info* r,
                         std::chrono::milliseconds timeout) {
  const auto ignore = [](state::reply) {};
  if (r == nullptr) {
    std::string member;
    {
      std::lock_guard lk(mutex);
      auto it = own.find(id);
      if (it == own.end()) return;
      member = std::move(it->second.second);
      own.erase(it);
    }
    store.command({"ZREM", index_key, std::move(member)}, ignore);
    return;
  }
  fleet_msg::held h;
  h.replica = options.replica;
  h.id = id;
  h.request = *r;
  const std::int64_t now = fleet_now_ms();
  h.since_s = now / 1000;
  h.deadline_ms = now + timeout.count();
  std::string member = fleet_msg::encode(h);
  if (member.size() > fleet_msg::max_message) return;  // listed here only
  {
    std::lock_guard lk(mutex);
    std::erase_if(own, [&](const auto& kv) { return kv.second.first <= now; });
    own[id] = {h.deadline_ms, member};
  }
  store.command({"ZADD", index_key, std::to_string(h.deadline_ms), std::move(member)}, ignore);
  // Entries of replicas that died before their holds ended: gone at their deadline.
  store.command({"ZREMRANGEBYSCORE", index_key, "-inf", core::str_cat("(", now)}, ignore);
}

void fleet::shared::drop(std::string_view text) {
  const auto n = malformed.fetch_add(1) + 1;
  // Bounded logging: whoever floods the store with junk does not flood the log.
  if (n <= 10 || n % 1000 == 0)
    AIRLOCK_LOG(warn, "approvals", "dropped a malformed message from the shared store (",
                text.size(), " bytes; ", n, " so far)");
}

void fleet::shared::on_message(std::string_view text, bool grants) {
  auto m = fleet_msg::decode(text);
  if (!m || (grants != m->grant.has_value())) return drop(text);
  if (m->grant) {
    asio::post(worker, [this, g = std::move(*m->grant)]() mutable { take_grant(std::move(g)); });
  } else if (m->decision) {
    asio::post(worker, [this, d = std::move(*m->decision)] { apply(d); });
  } else if (m->answer) {
    answer(m->answer->nonce, std::move(*m->answer));
  }
}

// On the worker: the decision for one of our holds, and our answer to the decider.
void fleet::shared::apply(const fleet_msg::decide& m) {
  fleet_msg::ack a;
  a.nonce = m.nonce;
  const bool ok = approvals.decide(m.id, m.d, a.message, &a.target);
  a.status = status_of(ok, a.message);
  AIRLOCK_LOG(info, "approvals", "decision from replica ", m.from, " on ", m.id, " by ", m.d.by,
              ": ", a.status, " ", a.message);
  store.command({"PUBLISH", channel_of(m.from), fleet_msg::encode(a)}, [](state::reply) {});
}

void fleet::shared::answer(std::uint64_t n, fleet_msg::ack a) {
  std::function<void(fleet_msg::ack)> done;
  {
    std::lock_guard lk(mutex);
    auto it = waiting.find(n);
    if (it == waiting.end()) return;  // answered already, or waited no longer
    done = std::move(it->second);
    waiting.erase(it);
  }
  done(std::move(a));
}

fleet::fleet(state::client& store, registry& approvals, fleet_options options)
    : shared_(std::make_shared<shared>(store, approvals, std::move(options))) {
  shared_->self = shared_;
  worker_ = std::thread([s = shared_] { s->worker.run(); });
}

fleet::~fleet() {
  shared_->approvals.set_fleet_hooks({}, {});
  shared_->approvals.set_revoke_hook({});
  std::map<std::uint64_t, std::pair<std::int64_t, std::string>> own;
  {
    std::lock_guard lk(shared_->mutex);
    own.swap(shared_->own);
  }
  for (auto& [id, entry] : own)
    shared_->store.command({"ZREM", shared_->index_key, std::move(entry.second)},
                           [](state::reply) {});
  shared_->worker.stop();
  if (worker_.joinable()) worker_.join();
  // Decisions still waiting get their answer now rather than never.
  std::map<std::uint64_t, std::function<void(fleet_msg::ack)>> waiting;
  {
    std::lock_guard lk(shared_->mutex);
    waiting.swap(shared_->waiting);
  }
  for (auto& [nonce, done] : waiting) {
    fleet_msg::ack a;
    a.status = 503;
    a.message =
        "this replica is shutting down: the decision may still be applied where it "
        "was sent; see GET /approvals";
    done(std::move(a));
  }
}

void fleet::start() {
  auto s = shared_;
  s->store.subscribe(s->channel_of(s->options.replica),
                     [s](std::string_view, std::string_view text) { s->on_message(text, false); });
  s->store.subscribe(s->grants_channel,
                     [s](std::string_view, std::string_view text) { s->on_message(text, true); });
  s->approvals.set_fleet_hooks([s](std::uint64_t id, const request_info* r,
                                   std::chrono::milliseconds timeout) { s->held(id, r, timeout); },
                               [s](const grant& g) { s->publish_grant(g); });
  s->approvals.set_revoke_hook([s](const std::string& agent) { s->revoke_kept(agent); });
  // The first sync at once: a replica that starts learns the grants in force.
  asio::post(s->worker, [p = s.get()] { p->sync(); });
}

std::string fleet::default_replica() {
  if (const char* env = std::getenv("AIRLOCK_REPLICA"); env != nullptr && *env != '\0')
    return fleet_msg::sanitize_replica(env);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fleet_msg::sanitize_replica(core::str_cat(host, "-", ::getpid()));
}

const std::string& fleet::replica() const noexcept {
  return shared_->options.replica;
}

std::uint64_t fleet::malformed() const noexcept {
  return shared_->malformed.load();
}

void fleet::decide_remote(const fleet_msg::qualified_id& q, const decision& d,
                          std::function<void(fleet_msg::ack)> done) {
  auto& s = *shared_;
  if (!s.store.up()) {
    fleet_msg::ack a;
    a.status = 503;
    a.message = core::str_cat("the shared store is unavailable: approval ", q.replica, ":", q.id,
                              " cannot be decided from this replica");
    return done(std::move(a));
  }
  fleet_msg::decide m{s.options.replica, s.nonce.fetch_add(1) + 1, q.id, d};
  {
    std::lock_guard lk(s.mutex);
    s.waiting.emplace(m.nonce, std::move(done));
  }
  // No answer in answer_timeout: 504, from the worker (the answer, if it comes later, finds
  // nobody waiting). The handler lives in the worker, a member of `shared`: it holds `shared`
  // by plain pointer (a shared_ptr there would keep it alive for ever); it only runs on the
  // worker's thread, which ~fleet joins.
  auto timer = std::make_shared<asio::steady_timer>(s.worker, s.options.answer_timeout);
  timer->async_wait([p = shared_.get(), timer, n = m.nonce, q](boost::system::error_code) {
    fleet_msg::ack late;
    late.status = 504;
    late.message = core::str_cat("replica ", q.replica, " did not answer within ",
                                 p->options.answer_timeout.count(),
                                 " ms; the decision may still be applied there: see GET "
                                 "/approvals");
    p->answer(n, std::move(late));
  });
  s.store.command({"PUBLISH", s.channel_of(q.replica), fleet_msg::encode(m)},
                  [sp = shared_, n = m.nonce, q](state::reply r) {
                    fleet_msg::ack no;
                    if (!r.ok()) {
                      no.status = 503;
                      no.message =
                          core::str_cat("the shared store did not take the decision: ", r.text);
                    } else if (r.what == state::reply::kind::integer && r.integer == 0) {
                      no.status = 404;
                      no.message = core::str_cat("no replica '", q.replica,
                                                 "' listens on the shared store: no pending "
                                                 "approval ",
                                                 q.replica, ":", q.id);
                    } else {
                      return;  // delivered: the holder answers
                    }
                    sp->answer(n, std::move(no));
                  });
}

fleet_msg::ack fleet::decide_remote(const fleet_msg::qualified_id& q, const decision& d) {
  auto answered = std::make_shared<std::promise<fleet_msg::ack>>();
  auto result = answered->get_future();
  decide_remote(q, d, [answered](fleet_msg::ack a) { answered->set_value(std::move(a)); });
  return result.get();  // the timer above answers within answer_timeout
}

}  // namespace airlock::filters::approval
