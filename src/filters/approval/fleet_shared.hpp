#pragma once
// The inside of filters::approval::fleet (fleet.hpp), shared by fleet.cpp (messages, decisions)
// and fleet_store.cpp (the listing, the kept grants and the periodic sync). Not a public header.

#include "core/str_cat.hpp"
#include "filters/approval/fleet.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>

namespace airlock::filters::approval {

inline std::int64_t fleet_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the store's callbacks and the registry's hooks reach; it outlives the fleet object
// as long as a callback holds it (the store client's subscriptions do, to the end).
struct fleet::shared {
  state::client& store;
  registry& approvals;
  fleet_options options;
  std::string index_key, grants_channel, kept_key;
  boost::asio::io_context worker{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
      worker.get_executor()};
  boost::asio::steady_timer timer{worker};
  std::atomic<std::uint64_t> nonce{0}, malformed{0};

  std::mutex mutex;
  // This replica's entries in the index: (deadline, member). An access request that times out
  // leaves without a hook call (it is kept for polling): pruned here at its deadline.
  std::map<std::uint64_t, std::pair<std::int64_t, std::string>> own;
  // Remote decisions waiting for their answer, by nonce: whoever takes one out calls it.
  std::map<std::uint64_t, std::function<void(fleet_msg::ack)>> waiting;
  // Grants applied here, by "<replica>:<id>", with their expiry (unix ms): pub/sub and the
  // periodic read of the kept grants bring the same grant twice.
  std::map<std::string, std::int64_t> seen;
  std::weak_ptr<shared> self;  // for the store's callbacks (they may come after the fleet)

  shared(state::client& s, registry& a, fleet_options o)
      : store(s), approvals(a), options(std::move(o)) {
    index_key = options.key_prefix + "approvals:held";
    grants_channel = options.key_prefix + "approvals:grants";
    kept_key = options.key_prefix + "approvals:grants:kept";
  }
  std::string channel_of(std::string_view replica) const {
    return core::str_cat(options.key_prefix, "approvals:to:", replica);
  }

  // fleet.cpp
  void held(std::uint64_t id, const request_info* r, std::chrono::milliseconds timeout);
  void on_message(std::string_view text, bool grants);
  void apply(const fleet_msg::decide& m);
  void answer(std::uint64_t nonce, fleet_msg::ack a);
  void drop(std::string_view text);
  // fleet_store.cpp
  void publish_grant(const grant& g);
  void revoke_kept(const std::string& agent);  // a stop: the agent's kept grants leave the store
  bool first_time(const fleet_msg::grant_msg& m);  // marks it seen
  void take_grant(fleet_msg::grant_msg m);         // on the worker
  void sync();                                     // on the worker, every sync_interval
  std::optional<std::vector<fleet_msg::held>> read_listing(std::uint64_t& malformed);
};

}  // namespace airlock::filters::approval
