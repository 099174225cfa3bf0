#pragma once
// Internal to the admin listener: its state (admin_server::impl), shared by admin_server.cpp
// (accepting, connections, stopping) and admin_routes.cpp (what each request gets).

#include "telemetry/admin_server.hpp"

#include "core/log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace airlock::telemetry::admin_detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// The admin port serves a scraper, a probe and an operator: small limits keep a stray or hostile
// client from holding more than a little memory and a few sockets.
constexpr std::size_t max_connections = 64;
constexpr std::size_t header_limit = 8 * 1024;
constexpr std::size_t body_limit = 8 * 1024;  // POST /reload carries no body
constexpr std::size_t read_buffer_limit = 64 * 1024;
constexpr auto io_timeout = std::chrono::seconds(10);

// Prometheus text exposition format 0.0.4.
constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view text_content_type = "text/plain; charset=utf-8";

response make_response(const request& req, http::status status, std::string body,
                       std::string_view content_type = text_content_type);

// An answer a handler gives later (a decision on a request another replica holds): the
// handler's callback posts the result to the connection's strand and wakes its coroutine,
// which waits on `wake` meanwhile. Shared by both, so either may go first.
struct later_answer {
  explicit later_answer(const net::any_io_executor& strand) : wake(strand) {}
  net::steady_timer wake;                                  // on the connection's strand
  std::optional<std::pair<unsigned, std::string>> result;  // set on that strand
};
// A handler that never answers (it must) still frees its connection after this long.
constexpr auto later_answer_limit = std::chrono::seconds(30);

// The impl whose handler the current thread is running, so that stop() called from inside a
// handler does not wait for itself.
extern thread_local const void* running_handler_of;

}  // namespace airlock::telemetry::admin_detail

namespace airlock::telemetry {

using namespace admin_detail;

struct admin_server::impl : std::enable_shared_from_this<impl> {
  struct connection {
    explicit connection(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;  // its executor is the connection's strand
  };

  impl(net::io_context& ioc, const tcp::endpoint& endpoint, admin_handlers h)
      : ioc_(ioc), acceptor_(net::make_strand(ioc)), handlers_(std::move(h)) {
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(net::socket_base::max_listen_connections);
    local_ = acceptor_.local_endpoint();
  }

  void start();
  void stop();
  net::awaitable<void> accept_loop();
  net::awaitable<void> session(std::shared_ptr<connection> c, std::uint64_t id);
  // The answer to one request; `later` is set (and the returned response is only a
  // placeholder) when the handler answers later: then await_later() gives the answer.
  response handle(const request& req, const tcp::endpoint& peer, const net::any_io_executor& strand,
                  std::shared_ptr<later_answer>& later);
  net::awaitable<response> await_later(std::shared_ptr<later_answer> later, const request& req);
  // The refusal of a request the admin port does not serve (admin_gate.hpp: a Host that does
  // not name it, a browser's cross-site request), or nullopt. A refused mutating request is
  // audited through handlers_.refused.
  std::optional<response> screen(const request& req, const tcp::endpoint& peer);
  // A subscription for GET /events, or null (not that request, not configured, or too many
  // subscribers: handle() answers those).
  std::shared_ptr<event_hub::subscription> subscribe_events(const request& req);
  // The operator behind a mutating request, or the refusal to send (401).
  std::optional<admin_actor> authorize(const request& req, const tcp::endpoint& peer,
                                       response& refusal);
  template <typename Fn>
  response call_handler(const request& req, Fn&& fn);
  static void reject_busy(tcp::socket& socket) noexcept;

  net::io_context& ioc_;
  tcp::acceptor acceptor_;  // used on its strand only once start() has run
  tcp::endpoint local_;
  admin_handlers handlers_;

  // Handlers run under a shared lock; stop() takes it exclusively after clearing
  // handlers_enabled_, so once stop() (or the destructor) returns, no handler is running or
  // will run, and the objects they refer to may go away while coroutines are still pending.
  std::shared_mutex handlers_mu_;
  std::atomic<bool> handlers_enabled_{true};

  std::mutex conns_mu_;
  std::unordered_map<std::uint64_t, std::weak_ptr<connection>> conns_;  // guarded by conns_mu_
  std::uint64_t next_id_ = 0;                                           // guarded by conns_mu_
  bool started_ = false;                                                // guarded by conns_mu_
  bool stopped_ = false;                                                // guarded by conns_mu_
};

template <typename Fn>
response admin_server::impl::call_handler(const request& req, Fn&& fn) {
  auto method = std::string_view(req.method_string());
  auto target = std::string_view(req.target());
  std::shared_lock lk(handlers_mu_);
  if (!handlers_enabled_.load()) {
    return make_response(req, http::status::service_unavailable, "shutting down");
  }
  const void* outer = running_handler_of;
  running_handler_of = this;
  struct restore {
    const void* outer;
    ~restore() { running_handler_of = outer; }
  } restore_guard{outer};
  try {
    return fn();
  } catch (const std::exception& e) {
    AIRLOCK_LOG(error, "admin", method, ' ', target, " failed: ", e.what());
  } catch (...) {
    AIRLOCK_LOG(error, "admin", method, ' ', target, " failed");
  }
  return make_response(req, http::status::internal_server_error, "internal error");
}

}  // namespace airlock::telemetry
