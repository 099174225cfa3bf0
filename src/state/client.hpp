#pragma once
// A Redis client for the state the replicas share (policy `state: redis`): its own Asio
// connections (TCP, a Unix socket, or TLS over TCP: transport.hpp) speaking RESP through
// hiredis's command encoder and reply parser (Debian's libhiredis-dev). Not hiredis's async
// API: Debian 12's hiredis (0.14) has no TLS, and owning the socket keeps every wait on one
// Asio timer.
//
// Why a thread of its own (one io_context, one thread) rather than the workers': a
// redisAsyncContext is not thread-safe and the proxy has one io_context per worker thread, so
// one shared connection needs one owner. The workers never touch hiredis: command() posts to
// the client's thread and the answer comes back through a callback (a filter's pending
// outcome, which the session takes back to its own executor). The cost per command is one post
// each way; a worker never blocks on Redis.
//
// Bounded time: connecting, AUTH and every command are bounded by `timeout`. Redis answers a
// connection's commands in order (RESP), so the oldest command in flight is the only one whose
// deadline needs a timer; when it passes, the connection is dropped (every command in flight is
// answered `unavailable`) and a new one is made with exponential back-off (100 ms doubling to
// `max_backoff`, with jitter). While the connection is down, command() answers `unavailable`
// at once.
//
// Pub/sub needs a connection of its own (a subscribed connection takes no other commands): the
// first subscribe() opens it; its channels are subscribed again after every reconnect. A message
// published while that connection is down is lost (Redis keeps none): subscribe()'s
// `on_subscribed` runs at each confirmation so that the caller can read what it may have missed.
//
// Bounded memory: a reply that is still incomplete after max_reply_bytes (commands) or
// max_message_bytes (pub/sub, which has no command and so no deadline) drops the connection
// ("reply too large"), as a protocol error does. hiredis would otherwise buffer a bulk string of
// any announced length (up to 512 MB, and a peer that is not Redis can announce more).
//
// Mode: `up` when the command connection is connected and Redis has answered its first command
// (AUTH, or PING without a password). Each change is logged once and reported to
// on_mode_change (for the metric and /readyz).
//
// Asio sends with MSG_NOSIGNAL (a TLS stream too: Asio's OpenSSL engine writes through the
// socket), so a server that goes away mid-write is an error, not SIGPIPE. A host name in `host` is
// resolved (blocking) on the client's own thread at each connect, never on a worker.
//
// @par Thread Safety
// command(), subscribe(), every(), up() and mode_changes() may be called from any thread. Callbacks
// run on the client's thread and must not block. The destructor answers everything in flight
// `unavailable` and joins the thread; call it from outside any callback.

#include "state/reply.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::state {

// TLS to the server (TCP only): transport.hpp says what is verified.
struct tls_options {
  std::string ca_file;      // PEM bundle; empty: the system trust store
  std::string server_name;  // the name the certificate must carry; empty: `host`
  std::string cert_file;    // client certificate chain (PEM); empty: none
  std::string key_file;     // its private key (PEM)
};

struct client_options {
  std::string host;  // TCP: an IP address or a name (resolved at each connect)
  std::uint16_t port = 6379;
  std::string unix_path;  // a Unix socket instead, when not empty
  std::string username;   // ACL user (Redis 6+); empty: AUTH password alone
  std::string password;   // empty: no AUTH
  std::optional<tls_options> tls;
  std::chrono::milliseconds timeout{250};
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{2'000};
  // A reply on the command connection, and a message on the pub/sub one, at most (framing
  // included). The largest the proxy asks for is the approvals' kept grants (4096 of at most
  // 16 KiB); messages are at most 16 KiB (approvals) or a few bytes (fleet control).
  std::size_t max_reply_bytes = std::size_t{128} << 20;
  std::size_t max_message_bytes = std::size_t{64} << 10;
  // Called on the client's thread at every change (up = true/false); the first report is the
  // first connection's outcome.
  std::function<void(bool up)> on_mode_change;
  // Called on the client's thread each time the command connection comes up (just after
  // on_mode_change): e.g. to read state that may have changed while it was down.
  std::function<void()> on_connected;
};

class client {
 public:
  using callback = std::function<void(reply)>;
  using message_callback = std::function<void(std::string_view channel, std::string_view text)>;

  explicit client(client_options options);  // connects in the background
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Sends one command (each argument binary-safe). `done` is called exactly once, on the
  // client's thread, or at once on the caller's when the store is down.
  void command(std::vector<std::string> args, callback done);
  // Subscribes to `channel` (on the pub/sub connection, kept across reconnects).
  // `on_subscribed` (may be empty) runs on the client's thread each time Redis confirms the
  // subscription: at first and after every reconnect of the pub/sub connection.
  void subscribe(std::string channel, message_callback on_message,
                 std::function<void()> on_subscribed = {});
  // Calls `tick` on the client's thread every `interval` until it returns false or the client
  // is destroyed (e.g. a periodic read of state a lost pub/sub message would leave stale).
  void every(std::chrono::milliseconds interval, std::function<bool()> tick);

  bool up() const noexcept { return up_.load(std::memory_order_relaxed); }
  // Changes of mode after the first report (a store down at start-up is not a change; the
  // gauge says so).
  std::uint64_t mode_changes() const noexcept {
    return mode_changes_.load(std::memory_order_relaxed);
  }
  // For tests and logs: where this client connects ("127.0.0.1:6379", "tls:127.0.0.1:6380",
  // "unix:/run/redis.sock").
  std::string where() const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
  std::atomic<bool> up_{false};
  std::atomic<std::uint64_t> mode_changes_{0};
};

}  // namespace airlock::state
