#pragma once
// Private to the state component: one connection to Redis on the client's io_context (its
// bytes through a transport: TCP, Unix socket or TLS), with its connect/AUTH sequence, the
// deadline of the oldest command in flight, and reconnects with back-off (client.hpp says why
// and how). A command connection or a pub/sub one. Commands are encoded with hiredis's
// redisFormatCommandArgv and replies parsed with its redisReader (RESP2, binary-safe).
//
// @par Thread Safety
// Everything on the io_context's one thread.

#include "state/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;
struct redisReply;

namespace airlock::state {

class transport;

class connection {
 public:
  struct hooks {
    std::function<void(bool up, const std::string& why)> on_state;
    std::function<void()> on_ready;       // up (after on_state(true))
    client::message_callback on_message;  // pub/sub connections
    // Pub/sub: Redis confirmed a subscription (["subscribe", channel, count]).
    std::function<void(std::string_view channel)> on_subscribed;
  };
  // `tls` non-null: TLS over TCP. `tls_error` non-empty: TLS was asked for but its context
  // could not be made; every attempt fails with it (the store stays unavailable, visibly).
  // `max_reply`: bytes of one reply at most (client.hpp, "Bounded memory").
  connection(boost::asio::io_context& ioc, const client_options& options,
             std::shared_ptr<boost::asio::ssl::context> tls, std::string tls_error,
             std::string role, std::size_t max_reply, hooks h);
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

  void connect();
  void connected(const std::string& error);
  void authenticate();  // AUTH, or PING: the server's first answer
  void ready();
  // The connection is gone (or never came): report it, retry later.
  void lost(const std::string& why);
  // Closes the connection on our side (an error, a deadline passed, AUTH refused): every call
  // in flight is answered unavailable; then lost().
  void drop(const std::string& why);
  void fail_calls(const std::string& why);
  void issue(const std::vector<std::string>& args, client::callback done);
  void queue(const std::vector<std::string>& args);
  void flush();
  void read();
  void dispatch(const redisReply* r);
  void subscribe_now(const std::string& channel);
  void arm_deadline();
  void check_deadlines();
  void schedule_reconnect();

  boost::asio::io_context& ioc_;
  const client_options& options_;
  std::string role_;
  std::size_t max_reply_;
  hooks hooks_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::string tls_error_;
  std::shared_ptr<transport> io_;  // null while down
  std::uint64_t generation_ = 0;   // of io_: completions of an older one are ignored
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader_;
  // Bytes fed to reader_ that are not part of a reply it has handed out: the reply in progress
  // (buffered, or parsed into its partial tree) is at least this big.
  std::size_t unfinished_ = 0;
  std::string out_;          // encoded commands not yet handed to a write
  bool write_busy_ = false;  // a write of io_ in flight
  phase phase_ = phase::down;
  std::deque<call> calls_;  // in the order Redis answers them
  std::vector<std::string> channels_;
  std::chrono::steady_clock::time_point connect_deadline_{};
  boost::asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  boost::asio::steady_timer retry_timer_;
  unsigned attempt_ = 0;
  std::minstd_rand jitter_{std::random_device{}()};
};

}  // namespace airlock::state
