#include "proxy/worker_start.hpp"

#include "core/log.hpp"
#include "policy/snapshot.hpp"
#include "proxy/session.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/socket.h>

#include <string_view>
#include <thread>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Over a cap: say so in one short answer and close, without reading the request.
void refuse_over_cap(tcp::socket& socket) {
  static constexpr std::string_view busy =
      "HTTP/1.1 503 Service Unavailable\r\n"
      "Proxy-Status: airlock; error=connection_limit_reached; details=\"too many "
      "connections\"\r\n"
      "X-Airlock-Reason: too_many_connections\r\nContent-Type: text/plain\r\n"
      "Content-Length: 35\r\nConnection: close\r\n\r\n"
      "airlock: too many connections (503)";
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  ::send(socket.native_handle(), busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
}

asio::awaitable<void> accept_loop(worker& w) {
  auto& shared = w.shared();
  for (;;) {
    // The peer's address comes with accept(2) itself: no getpeername(2) per connection.
    tcp::endpoint peer;
    auto [ec, socket] = co_await w.acceptor->async_accept(peer, use_tuple);
    if (ec) {
      if (ec == asio::error::operation_aborted || !w.acceptor->is_open()) co_return;
      // EMFILE and friends: back off briefly instead of spinning.
      AIRLOCK_LOG(warn, "proxy", "accept failed: ", ec.message());
      asio::steady_timer t(w.context(), std::chrono::milliseconds(50));
      co_await t.async_wait(use_tuple);
      continue;
    }
    boost::system::error_code pec;
    if (shared.draining.load()) {
      socket.close(pec);  // accepted just as the drain began
      continue;
    }
    auto snap = shared.current();
    const auto& limits = snap->limits();
    if (!shared.limiter.try_acquire(peer.address(), limits.max_connections,
                                    limits.max_connections_per_client)) {
      refuse_over_cap(socket);
      AIRLOCK_LOG(debug, "proxy", "connection from ", peer.address().to_string(),
                  " refused: connection cap");
      continue;
    }
    asio::co_spawn(
        w.context(),
        [&w, s = std::move(socket), peer]() mutable -> asio::awaitable<void> {
          client_slot slot(w.shared().limiter, peer.address());
          co_await serve_connection(w, std::move(s), peer, std::string{});
        },
        asio::detached);
  }
}

}  // namespace

std::vector<std::unique_ptr<worker>> listen_workers(shared_state& shared,
                                                    const tcp::endpoint& listen, unsigned threads,
                                                    tcp::endpoint& bound) {
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned i = 0; i < threads; ++i) {
    auto w = std::make_unique<worker>(shared);
    w->acceptor.emplace(w->context());
    auto& a = *w->acceptor;
    const tcp::endpoint ep = i == 0 ? listen : bound;
    a.open(ep.protocol());
    a.set_option(tcp::acceptor::reuse_address(true));
    int one = 1;
    ::setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    a.bind(ep);
    a.listen(asio::socket_base::max_listen_connections);
    if (i == 0) bound = a.local_endpoint();
    workers.push_back(std::move(w));
  }
  return workers;
}

void run_workers(std::vector<std::unique_ptr<worker>>& workers) {
  for (auto& w : workers) {
    asio::co_spawn(w->context(), accept_loop(*w), asio::detached);
    w->keep_timer_floor();
    w->thread = std::thread([ctx = &w->context()] {
      for (;;) {
        try {
          ctx->run();
          return;
        } catch (const std::exception& e) {
          // A handler threw: that session is gone, the worker carries on.
          AIRLOCK_LOG(error, "proxy", "worker: unexpected exception: ", e.what());
        }
      }
    });
  }
}

}  // namespace airlock::proxy
