#include "telemetry/admin_server.hpp"

#include "telemetry/admin_events.hpp"
#include "telemetry/admin_server_impl.hpp"

namespace airlock::telemetry {
namespace admin_detail {

thread_local const void* running_handler_of = nullptr;

response make_response(const request& req, http::status status, std::string body,
                       std::string_view content_type) {
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

}  // namespace admin_detail

namespace {

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
    boost::system::error_code pec;
    const tcp::endpoint peer = c->stream.socket().remote_endpoint(pec);
    // The gate comes first, before an /events subscription takes a slot.
    std::optional<response> refusal = screen(parser.get(), peer);
    if (auto sub = refusal ? nullptr : subscribe_events(parser.get())) {
      // The stream holds only its subscription: stop() ends it at its next poll.
      // Named, not a temporary in the co_await expression: GCC 12 destroyed the lambda's
      // capture twice there (ASan: heap-use-after-free).
      std::function<bool()> stopping = [this] { return !handlers_enabled_.load(); };
      co_await serve_events(c->stream, std::move(sub), std::move(stopping));
      break;
    }
    std::shared_ptr<later_answer> later;
    response res =
        refusal ? std::move(*refusal) : handle(parser.get(), peer, c->stream.get_executor(), later);
    if (later) res = co_await await_later(std::move(later), parser.get());
    bool keep_alive = res.keep_alive();
    c->stream.expires_after(io_timeout);
    auto [wec, wn] = co_await http::async_write(c->stream, res, use_tuple);
    if (wec || !keep_alive) break;
  }
  boost::system::error_code ec;
  c->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  c->stream.socket().close(ec);
}

net::awaitable<response> admin_server::impl::await_later(std::shared_ptr<later_answer> later,
                                                         const request& req) {
  later->wake.expires_after(later_answer_limit);
  while (!later->result) {
    auto [ec] = co_await later->wake.async_wait(use_tuple);
    if (!ec && !later->result) {
      AIRLOCK_LOG(error, "admin", std::string_view(req.method_string()), ' ',
                  std::string_view(req.target()), ": no answer in ", later_answer_limit.count(),
                  " s");
      co_return make_response(req, http::status::gateway_timeout, "no answer\n");
    }
  }
  co_return make_response(req, static_cast<http::status>(later->result->first),
                          std::move(later->result->second));
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
