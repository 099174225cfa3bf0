// The fleet's side in the store: the listing of every replica's holds (GET /approvals), the
// grants kept for replicas that start later, and the periodic sync (fleet.hpp).
#include "core/log.hpp"
#include "filters/approval/fleet_shared.hpp"
#include "filters/approval/json_fields.hpp"

#include <boost/asio/post.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <future>

namespace airlock::filters::approval {
namespace {

// The other replicas' entries one listing reads at most.
constexpr int max_listed = 512;
// Grants read back from the store at most, and remembered as applied at most.
constexpr int max_kept = 4096;
constexpr std::size_t max_seen = 8192;

const auto ignore = [](state::reply) {};

std::string seen_key(const fleet_msg::grant_msg& m) {
  const auto expires =
      m.g.expires == std::chrono::system_clock::time_point::max()
          ? std::int64_t{0}
          : std::chrono::duration_cast<std::chrono::milliseconds>(m.g.expires.time_since_epoch())
                .count();
  // The expiry too: a replica that restarts under the same name numbers its holds from 1 again.
  return core::str_cat(m.from, ":", m.g.id, ":", expires);
}

}  // namespace

std::string fleet::json() {
  namespace json = boost::json;
  json::value local = json::parse(shared_->approvals.json());
  json::object& root = local.as_object();
  root["replica"] = shared_->options.replica;
  std::uint64_t dropped = 0;
  auto others = shared_->read_listing(dropped);
  for (std::uint64_t i = 0; i < dropped; ++i)
    shared_->drop("");
  root["fleet"] = others ? "ok" : "unavailable";
  root["fleet_malformed"] = malformed();
  if (!others) return json::serialize(root);
  json::array& pending = root["pending"].as_array();
  const std::int64_t now = fleet_now_ms();
  for (const auto& h : *others) {
    if (h.replica == shared_->options.replica) continue;  // listed from the registry
    json::object o;
    o["id"] = core::str_cat(h.replica, ":", h.id);
    o["replica"] = h.replica;
    put_request(o, h.request);
    o["since"] = h.since_s;
    o["outcome"] = "pending";
    o["seconds_left"] = std::max<std::int64_t>(0, (h.deadline_ms - now) / 1000);
    pending.push_back(std::move(o));
  }
  return json::serialize(root);
}

std::optional<std::vector<fleet_msg::held>> fleet::shared::read_listing(std::uint64_t& dropped) {
  auto p = std::make_shared<std::promise<state::reply>>();
  auto f = p->get_future();
  store.command({"ZRANGEBYSCORE", index_key, core::str_cat("(", fleet_now_ms()), "+inf", "LIMIT",
                 "0", std::to_string(max_listed)},
                [p](state::reply r) { p->set_value(std::move(r)); });
  // The client bounds the command by the same timeout; the margin covers the thread hop.
  if (f.wait_for(options.store_timeout + std::chrono::milliseconds(100)) !=
      std::future_status::ready)
    return std::nullopt;
  const state::reply r = f.get();
  if (r.what != state::reply::kind::array) return std::nullopt;
  std::vector<fleet_msg::held> out;
  for (const auto& e : r.elements) {
    auto h = e.what == state::reply::kind::string ? fleet_msg::decode_held(e.text) : std::nullopt;
    if (h)
      out.push_back(std::move(*h));
    else
      ++dropped;
  }
  return out;
}

bool fleet::shared::first_time(const fleet_msg::grant_msg& m) {
  std::string key = seen_key(m);
  std::lock_guard lk(mutex);
  if (seen.contains(key)) return false;
  if (seen.size() < max_seen)
    seen.emplace(std::move(key), m.g.expires == std::chrono::system_clock::time_point::max()
                                     ? INT64_MAX
                                     : std::chrono::duration_cast<std::chrono::milliseconds>(
                                           m.g.expires.time_since_epoch())
                                           .count());
  return true;
}

void fleet::shared::publish_grant(const grant& g) {
  fleet_msg::grant_msg m{options.replica, g};
  first_time(m);  // applied here already
  std::string text = fleet_msg::encode(m);
  const auto now = fleet_now_ms();
  // Kept (scored by its expiry) for replicas that start or reconnect later; published for the
  // others now.
  const std::string score =
      g.expires == std::chrono::system_clock::time_point::max()
          ? std::string("+inf")
          : std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(g.expires.time_since_epoch())
                    .count());
  store.command({"ZADD", kept_key, score, text}, ignore);
  store.command({"ZREMRANGEBYSCORE", kept_key, "-inf", core::str_cat("(", now)}, ignore);
  store.command({"PUBLISH", grants_channel, std::move(text)}, ignore);
}

void fleet::shared::revoke_kept(const std::string& agent) {
  store.command({"ZRANGEBYSCORE", kept_key, "-inf", "+inf", "LIMIT", "0", std::to_string(max_kept)},
                [weak = self, agent](state::reply r) {
                  auto sp = weak.lock();
                  if (!sp) return;
                  std::vector<std::string> remove{"ZREM", sp->kept_key};
                  for (const auto& e : r.elements) {
                    if (e.what != state::reply::kind::string) continue;
                    auto m = fleet_msg::decode(e.text);
                    if (m && m->grant && m->grant->g.agent == agent) remove.push_back(e.text);
                  }
                  if (remove.size() > 2) sp->store.command(std::move(remove), ignore);
                });
}

void fleet::shared::take_grant(fleet_msg::grant_msg m) {
  if (!first_time(m)) return;
  AIRLOCK_LOG(info, "approvals", "grant from replica ", m.from, ": agent ", m.g.agent, " ",
              m.g.host, ":", m.g.port, " by ", m.g.by);
  approvals.add_grant(std::move(m.g));
}

// Pub/sub does not replay what a replica missed (it started later, or was cut off from the
// store), and a Redis without persistence forgets the listing when it restarts: every
// sync_interval each replica adds its holds to the listing again (the same members: a no-op
// when they are there) and applies the kept grants it has not seen.
void fleet::shared::sync() {
  const auto now = fleet_now_ms();
  std::vector<std::string> add{"ZADD", index_key};
  {
    std::lock_guard lk(mutex);
    std::erase_if(own, [&](const auto& kv) { return kv.second.first <= now; });
    std::erase_if(seen, [&](const auto& kv) { return kv.second <= now; });
    for (const auto& [id, entry] : own) {
      add.push_back(std::to_string(entry.first));
      add.push_back(entry.second);
    }
  }
  if (add.size() > 2) store.command(std::move(add), ignore);
  store.command(
      {"ZRANGEBYSCORE", kept_key, core::str_cat("(", now), "+inf", "LIMIT", "0",
       std::to_string(max_kept)},
      [weak = self](state::reply r) {
        auto sp = weak.lock();
        if (!sp) return;
        for (const auto& e : r.elements) {
          auto m = e.what == state::reply::kind::string ? fleet_msg::decode(e.text) : std::nullopt;
          if (!m || !m->grant) {
            sp->drop(e.text);
            continue;
          }
          // `this` alone: a handler left in the queue must not keep `shared` alive
          // (it owns the queue); the worker only runs while `shared` lives.
          boost::asio::post(sp->worker, [p = sp.get(), g = std::move(*m->grant)]() mutable {
            p->take_grant(std::move(g));
          });
        }
      });
  timer.expires_after(options.sync_interval);
  timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) sync();
  });
}

}  // namespace airlock::filters::approval
