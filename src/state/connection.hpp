#pragma once
// Private to the state component: one hiredis async connection on the client's io_context,
// with its connect/AUTH sequence, the deadline of the oldest command in flight, and reconnects
// with back-off (client.hpp says why and how). A command connection or a pub/sub one.
//
// @par Thread Safety
// Everything on the io_context's one thread.

#include "state/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

struct redisAsyncContext;

namespace airlock::state {

class connection {
 public:
  struct hooks {
    std::function<void(bool up, const std::string& why)> on_state;
    std::function<void()> on_ready;       // up (after on_state(true))
    client::message_callback on_message;  // pub/sub connections
  };
  connection(boost::asio::io_context& ioc, const client_options& options, std::string role,
             hooks h);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void start();
  // Frees the connection (everything in flight is answered unavailable); no reconnect after.
  void close();
  bool up() const noexcept { return phase_ == phase::up; }

  // Sends a command; `done` once, with `unavailable` when not up, on timeout or on a drop.
  void send(const std::vector<std::string>& args, client::callback done);
  // Pub/sub: subscribed now when up, and again after every reconnect.
  void subscribe(const std::string& channel);

 private:
  enum class phase { down, connecting, authenticating, up, closed };
  struct call {
    client::callback done;
    std::chrono::steady_clock::time_point deadline;
  };

  static void connected_cb(const redisAsyncContext* ac, int status);
  static void disconnected_cb(const redisAsyncContext* ac, int status);
  static void reply_cb(redisAsyncContext* ac, void* r, void* privdata);
  static void message_cb(redisAsyncContext* ac, void* r, void* privdata);

  void connect();
  void authenticate();
  void ready();
  // The connection is gone (or never came): report it, retry later.
  void lost(const std::string& why);
  // Drops the connection on our side (a deadline passed, AUTH refused).
  void drop(const std::string& why);
  void finish(call* c, reply r);
  void issue(const std::vector<std::string>& args, client::callback done);
  void subscribe_now(const std::string& channel);
  void arm_deadline();
  void check_deadlines();
  void schedule_reconnect();

  boost::asio::io_context& ioc_;
  const client_options& options_;
  std::string role_;
  hooks hooks_;
  redisAsyncContext* ac_ = nullptr;
  phase phase_ = phase::down;
  std::deque<std::unique_ptr<call>> calls_;  // in the order Redis answers them
  std::vector<std::string> channels_;
  std::chrono::steady_clock::time_point connect_deadline_{};
  boost::asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  boost::asio::steady_timer retry_timer_;
  unsigned attempt_ = 0;
  std::minstd_rand jitter_{std::random_device{}()};
};

}  // namespace airlock::state
