#include "telemetry/admin_server.hpp"

#include "core/log.hpp"
#include "telemetry/console_page.hpp"

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

namespace airlock::telemetry {
namespace {

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
                       std::string_view content_type = text_content_type) {
  response res{status, req.version()};
  res.set(http::field::content_type, content_type);
  // Metrics and health answers are live state: no intermediary or client should reuse them.
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  if (req.method() == http::verb::head) {
    // RFC 9110 section 9.3.2: same header fields as GET, no content.
    auto length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  return res;
}

// After refusing a request whose rest is still arriving (an oversized head or body), closing at
// once would make the kernel answer the unread bytes with a RST, which can destroy the refusal
// before the client reads it. Send FIN, then discard what still comes for a short while
// (RFC 9112 section 9.6, "lingering close").
net::awaitable<void> linger_close(beast::tcp_stream& stream) {
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  char sink[4096];
  for (std::size_t total = 0; total < 256 * 1024;) {
    auto [rec, n] = co_await stream.async_read_some(net::buffer(sink), use_tuple);
    if (rec) break;
    total += n;
  }
}

void log_exception(std::exception_ptr e, std::string_view what) noexcept {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    try {
      AIRLOCK_LOG(error, "admin", what, ": ", ex.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

}  // namespace

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
  response handle(const request& req);
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

namespace {
// The impl whose handler the current thread is running, so that stop() called from inside a
// handler does not wait for itself.
thread_local const void* running_handler_of = nullptr;
}  // namespace

void admin_server::impl::start() {
  {
    std::lock_guard lk(conns_mu_);
    if (started_ || stopped_) return;
    started_ = true;
  }
  net::co_spawn(acceptor_.get_executor(), accept_loop(),
                [](std::exception_ptr e) { log_exception(e, "admin accept loop"); });
}

void admin_server::impl::stop() {
  handlers_enabled_.store(false);
  if (running_handler_of != this) {
    std::unique_lock wait_for_running_handlers(handlers_mu_);
  }
  std::vector<std::shared_ptr<connection>> open;
  {
    std::lock_guard lk(conns_mu_);
    if (stopped_) return;
    stopped_ = true;
    if (!started_) {
      // No coroutine uses the acceptor: release the port now, even if the io_context never
      // runs again.
      boost::system::error_code ec;
      acceptor_.close(ec);
      return;
    }
    for (auto& [id, weak] : conns_) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  // Sockets are not thread-safe: close each on its own strand. When the io_context is not
  // running, the posted closures (and the coroutine frames) are destroyed with it, which closes
  // the sockets as well.
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
  });
  for (auto& c : open) {
    net::post(c->stream.get_executor(), [c] {
      boost::system::error_code ec;
      c->stream.socket().shutdown(tcp::socket::shutdown_both, ec);
      c->stream.socket().close(ec);
    });
  }
}

void admin_server::impl::reject_busy(tcp::socket& socket) noexcept {
  // A best-effort answer on a fresh socket: its send buffer is empty, so a non-blocking write
  // of a few bytes does not wait. Closing without a word would look like a crash.
  static constexpr std::string_view busy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Content-Length: 27\r\nConnection: close\r\n\r\ntoo many admin connections\n";
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  if (!ec) socket.write_some(net::buffer(busy.data(), busy.size()), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

net::awaitable<void> admin_server::impl::accept_loop() {
  auto self = shared_from_this();  // the frame keeps the impl alive past ~admin_server
  for (;;) {
    // One strand per connection: its coroutine and stop()'s close never run concurrently.
    net::any_io_executor strand = net::make_strand(ioc_);
    auto [ec, socket] = co_await acceptor_.async_accept(strand, use_tuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
      // EMFILE, ENFILE, ENOBUFS...: retrying at once would spin; try again shortly.
      AIRLOCK_LOG(warn, "admin", "accept failed: ", ec.message());
      net::steady_timer t(acceptor_.get_executor(), std::chrono::milliseconds(100));
      co_await t.async_wait(use_tuple);
      continue;
    }
    std::shared_ptr<connection> c;
    std::uint64_t id = 0;
    {
      std::lock_guard lk(conns_mu_);
      if (stopped_) co_return;
      if (conns_.size() < max_connections) {
        c = std::make_shared<connection>(std::move(socket));
        id = next_id_++;
        conns_.emplace(id, c);
      }
    }
    if (!c) {
      reject_busy(socket);
      continue;
    }
    auto executor = c->stream.get_executor();
    net::co_spawn(executor, session(std::move(c), id),
                  [](std::exception_ptr e) { log_exception(e, "admin connection"); });
  }
}

net::awaitable<void> admin_server::impl::session(std::shared_ptr<connection> c, std::uint64_t id) {
  auto self = shared_from_this();
  struct unregister {
    impl& s;
    std::uint64_t id;
    ~unregister() {
      std::lock_guard lk(s.conns_mu_);
      s.conns_.erase(id);
    }
  } guard{*this, id};

  beast::flat_buffer buffer(read_buffer_limit);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(header_limit);
    parser.body_limit(body_limit);
    c->stream.expires_after(io_timeout);
    auto [ec, n] = co_await http::async_read(c->stream, buffer, parser, use_tuple);
    if (ec) {
      // A request we will not read: answer with the reason if the client can still hear it
      // (RFC 9110 sections 15.5.14 and 15.5.1; RFC 6585 section 5), then close.
      std::optional<response> refusal;
      request dummy{http::verb::get, "/", 11};
      dummy.keep_alive(false);
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        refusal = make_response(dummy, http::status::request_header_fields_too_large,
                                "request head too large");
      } else if (ec == http::error::body_limit) {
        refusal = make_response(dummy, http::status::payload_too_large, "request body too large");
      } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message) {
        refusal = make_response(dummy, http::status::bad_request, "malformed request");
      }
      if (refusal) {
        c->stream.expires_after(io_timeout);
        auto [wec, wn] = co_await http::async_write(c->stream, *refusal, use_tuple);
        if (!wec) co_await linger_close(c->stream);
      }
      break;
    }
    response res = handle(parser.get());
    bool keep_alive = res.keep_alive();
    c->stream.expires_after(io_timeout);
    auto [wec, wn] = co_await http::async_write(c->stream, res, use_tuple);
    if (wec || !keep_alive) break;
  }
  boost::system::error_code ec;
  c->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  c->stream.socket().close(ec);
}

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

namespace {

// A browser on another site may send a simple POST here (a form, fetch with mode no-cors):
// it cannot read the answer, but the action would happen. Browsers say where a request comes
// from (Fetch Metadata's Sec-Fetch-Site, W3C; RFC 6454 Origin): a mutating request from any
// other origin is refused. curl and other clients send neither header.
bool cross_site(const request& req) {
  if (auto site = req.find("Sec-Fetch-Site"); site != req.end()) {
    const std::string_view v = site->value();
    if (v != "same-origin" && v != "none") return true;
  }
  if (auto origin = req.find(http::field::origin); origin != req.end()) {
    const auto host = req.find(http::field::host);
    if (host == req.end()) return true;
    const std::string_view o = origin->value();
    // RFC 6454 section 6.1: scheme "://" host [":" port]; the admin port speaks plain http.
    if (!o.starts_with("http://") || o.substr(7) != host->value()) return true;
  }
  return false;
}

}  // namespace

response admin_server::impl::handle(const request& req) {
  std::string_view target = req.target();
  // Only origin-form targets name admin resources. Absolute-form ("http://host/metrics"),
  // authority-form (CONNECT) and asterisk-form requests are someone using this port as a
  // proxy: there is nothing here for them (RFC 9112 section 3.2).
  if (target.empty() || target.front() != '/' || req.method() == http::verb::connect) {
    return make_response(req, http::status::not_found, "not found");
  }
  std::string_view path = target.substr(0, target.find('?'));
  bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  if (!get && cross_site(req))
    return make_response(req, http::status::forbidden, "cross-site request refused\n");

  auto not_configured = [&] {
    return make_response(req, http::status::not_implemented, "not configured");
  };
  auto method_not_allowed = [&](std::string_view allow) {
    auto res = make_response(req, http::status::method_not_allowed, "method not allowed");
    res.set(http::field::allow, allow);
    return res;
  };

  if (path == "/healthz") {
    if (!get) return method_not_allowed("GET, HEAD");
    // Liveness: answered by the event loop itself, so it fails when the loop is stuck.
    return make_response(req, http::status::ok, "ok");
  }
  if (path == "/readyz") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.ready) return not_configured();
    return call_handler(req, [&] {
      return handlers_.ready() ? make_response(req, http::status::ok, "ready")
                               : make_response(req, http::status::service_unavailable, "not ready");
    });
  }
  if (path == "/metrics") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.metrics_text) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.metrics_text(), metrics_content_type);
    });
  }
  if (path == "/policy") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.policy_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.policy_json(), "application/json");
    });
  }
  if (path == "/reload") {
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.reload) return not_configured();
    return call_handler(req, [&] {
      std::string message;
      bool ok = handlers_.reload(message);
      // 422: the request was understood, the policy it asked to load was not acceptable.
      return make_response(req, ok ? http::status::ok : http::status::unprocessable_entity,
                           std::move(message));
    });
  }
  if (path == "/agents") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.agents_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.agents_json(), "application/json");
    });
  }
  if (path.starts_with("/agents/")) {
    // /agents/<name>/stop or /agents/<name>/resume; agent names never contain '/'.
    std::string_view rest = path.substr(8);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) {
      return make_response(req, http::status::not_found, "not found");
    }
    const std::string_view name = rest.substr(0, slash);
    const std::string_view action = rest.substr(slash + 1);
    if (action != "stop" && action != "resume") {
      return make_response(req, http::status::not_found, "not found");
    }
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.agent_control) return not_configured();
    return call_handler(req, [&] {
      std::string message;
      bool ok = handlers_.agent_control(name, action == "stop", message);
      return make_response(req, ok ? http::status::ok : http::status::not_found,
                           std::move(message));
    });
  }
  if (path == "/console") {
    if (!get) return method_not_allowed("GET, HEAD");
    auto res = make_response(req, http::status::ok, std::string(console_html()),
                             "text/html; charset=utf-8");
    res.set("Content-Security-Policy", console_csp);
    res.set("X-Frame-Options", "DENY");  // older browsers without frame-ancestors
    res.set("X-Content-Type-Options", "nosniff");
    return res;
  }
  if (path == "/approvals") {
    if (!get) return method_not_allowed("GET, HEAD");
    if (!handlers_.approvals_json) return not_configured();
    return call_handler(req, [&] {
      return make_response(req, http::status::ok, handlers_.approvals_json(), "application/json");
    });
  }
  if (path.starts_with("/approvals/")) {
    // /approvals/<id>/approve or /approvals/<id>/refuse
    std::string_view rest = path.substr(11);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0)
      return make_response(req, http::status::not_found, "not found");
    const std::string_view id = rest.substr(0, slash);
    const std::string_view action = rest.substr(slash + 1);
    if (action != "approve" && action != "refuse")
      return make_response(req, http::status::not_found, "not found");
    if (req.method() != http::verb::post) return method_not_allowed("POST");
    if (!handlers_.approval_decide) return not_configured();
    return call_handler(req, [&] {
      std::string message;
      const unsigned status =
          handlers_.approval_decide(id, action == "approve", req.body(), message);
      return make_response(req, static_cast<http::status>(status), std::move(message));
    });
  }
  return make_response(req, http::status::not_found, "not found");
}

admin_server::admin_server(net::io_context& ioc, const tcp::endpoint& endpoint,
                           admin_handlers handlers)
    : impl_(std::make_shared<impl>(ioc, endpoint, std::move(handlers))) {}

admin_server::~admin_server() {
  impl_->stop();
}

tcp::endpoint admin_server::local_endpoint() const {
  return impl_->local_;
}

void admin_server::start() {
  impl_->start();
}

void admin_server::stop() {
  impl_->stop();
}

}  // namespace airlock::telemetry
