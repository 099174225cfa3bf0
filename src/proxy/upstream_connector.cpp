#include "proxy/upstream_connector.hpp"

#include "core/saturating_steady.hpp"
#include "core/str_cat.hpp"
#include "policy/snapshot.hpp"
#include "proxy/connection_pool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// One name lookup. getaddrinfo blocks and cannot be cancelled, so it runs on a small pool
// shared by all workers (Asio's resolver would run it on one thread per worker, so one slow
// name would hold up every lookup of that worker, and a timeout could not end the wait).
//
// The pool thread may finish after the session gave up, or after its io_context is gone, so
// the shared state holds no I/O object: the timer that wakes the session lives in the
// session's own frame, and the answer is posted to the session's executor only while the
// session still waits for it (`abandoned`, under the mutex, is set when its frame ends).
struct lookup_state {
  explicit lookup_state(const asio::any_io_executor& ex) : executor(ex) {}
  std::mutex mutex;
  bool abandoned = false;          // guarded by mutex
  asio::any_io_executor executor;  // the session's; posted to only while !abandoned
  // Touched only on the session's executor:
  asio::steady_timer* wake = nullptr;  // the session's timer while it waits
  bool done = false;
  int error = 0;  // getaddrinfo's code
  std::vector<tcp::endpoint> endpoints;
};

// Marks the lookup abandoned when the waiting frame ends, however it ends (answer, timeout, or
// the io_context destroying the coroutine).
struct lookup_waiter {
  std::shared_ptr<lookup_state> state;
  ~lookup_waiter() {
    state->wake = nullptr;
    std::lock_guard lock(state->mutex);
    state->abandoned = true;
  }
};

asio::thread_pool& lookup_pool() {
  // Never destroyed: a lookup stuck in getaddrinfo must not hold up the process's exit.
  static auto* pool = new asio::thread_pool(4);
  return *pool;
}

std::shared_ptr<lookup_state> start_lookup(const asio::any_io_executor& ex, std::string host,
                                           std::uint16_t port) {
  auto state = std::make_shared<lookup_state>(ex);
  asio::post(lookup_pool(), [state, host = std::move(host), port] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo* list = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
    std::vector<tcp::endpoint> found;
    for (auto* a = list; rc == 0 && a; a = a->ai_next) {
      if (a->ai_family == AF_INET) {
        auto* sin = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
        found.emplace_back(asio::ip::address_v4(ntohl(sin->sin_addr.s_addr)), port);
      } else if (a->ai_family == AF_INET6) {
        auto* sin6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
        asio::ip::address_v6::bytes_type bytes;
        std::memcpy(bytes.data(), sin6->sin6_addr.s6_addr, bytes.size());
        found.emplace_back(asio::ip::address_v6(bytes, sin6->sin6_scope_id), port);
      }
    }
    if (list) ::freeaddrinfo(list);
    // Hand the answer to the session's own executor, unless it has given up already.
    std::lock_guard lock(state->mutex);
    if (state->abandoned) return;
    asio::post(state->executor, [state, rc, found = std::move(found)]() mutable {
      state->done = true;
      state->error = rc;
      state->endpoints = std::move(found);
      if (state->wake) state->wake->cancel();
    });
  });
  return state;
}

}  // namespace

std::string to_string(const tcp::endpoint& ep) {
  const auto& a = ep.address();
  return a.is_v6() ? core::str_cat('[', a.to_string(), "]:", ep.port())
                   : core::str_cat(net::ipv4_text(a.to_v4()), ':', ep.port());
}

asio::awaitable<connect_outcome> connect_upstream(boost::beast::tcp_stream& stream,
                                                  const net::address_guard& guard,
                                                  const upstream_request& request) {
  connect_outcome out;
  const auto& host = *request.host;
  std::vector<tcp::endpoint> endpoints;

  if (host.is_ip()) {
    endpoints.emplace_back(host.address, request.port);
  } else if (!request.pinned.empty()) {
    for (const auto& a : request.pinned)
      endpoints.emplace_back(a, request.port);
  } else {
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer wake(executor, asio::steady_timer::time_point::max());
    asio::steady_timer deadline(executor, core::saturating_steady(request.dns_timeout));
    auto lookup = start_lookup(executor, host.text, request.port);
    lookup->wake = &wake;
    lookup_waiter waiter{lookup};
    if (!lookup->done) {
      // Whichever comes first: the answer (which cancels `wake`) or the deadline.
      co_await (wake.async_wait(use_tuple) || deadline.async_wait(use_tuple));
    }
    if (!lookup->done) {
      out.error = core::errc::dns_timeout;
      out.detail = core::str_cat("resolving ", host.text, " timed out");
      co_return out;
    }
    if (lookup->error != 0 || lookup->endpoints.empty()) {
      out.error = core::errc::dns_error;
      out.detail = core::str_cat(
          "cannot resolve ", host.text, ": ",
          lookup->error ? std::string(::gai_strerror(lookup->error)) : std::string("no addresses"));
      co_return out;
    }
    endpoints = std::move(lookup->endpoints);
  }

  // Refuse when ANY address is prohibited: a name that mixes a public and a private address
  // is an attack on whoever picks the address, so it is not reached at all.
  for (const auto& ep : endpoints) {
    auto verdict =
        request.own ? request.own->check(ep.address(), ep.port()) : net::guard_verdict{true, {}};
    if (verdict.allowed) verdict = guard.check(ep.address(), ep.port(), request.extra_allow);
    if (!verdict.allowed) {
      out.error = core::errc::destination_ip_prohibited;
      out.detail = host.is_ip()
                       ? core::str_cat(host.text, " is ", verdict.category)
                       : core::str_cat(host.text, " resolves to ", ep.address().to_string(), " (",
                                       verdict.category, ')');
      co_return out;
    }
  }

  auto started = std::chrono::steady_clock::now();
  stream.expires_after(core::saturating_steady(request.connect_timeout));
  auto [ec, ep] = co_await stream.async_connect(endpoints, use_tuple);
  stream.expires_never();
  if (ec) {
    stream.close();
    out.error = ec == boost::beast::error::timeout ? core::errc::connect_timeout
                                                   : core::errc::connect_refused;
    out.detail = core::str_cat("connect to ", host.text, ':', request.port, ": ", ec.message());
    co_return out;
  }
  out.endpoint = ep;
  out.connect_time = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  boost::system::error_code ignored;
  stream.socket().set_option(tcp::no_delay(true), ignored);
  co_return out;
}

upstream_request upstream_for(const net::authority& target, const policy::compiled_rule& rule,
                              const policy::model::limits& limits, const net::address_guard* own) {
  upstream_request ur;
  ur.own = own;
  ur.host = &target.host;
  ur.port = target.port;
  ur.pinned = rule.pinned;
  ur.extra_allow = rule.allow_cidrs;
  ur.dns_timeout = limits.dns_timeout;
  ur.connect_timeout = limits.connect_timeout;
  return ur;
}

std::optional<tcp::endpoint> take_pooled(plain_upstream_ptr& upstream, connection_pool& pool,
                                         const std::string& pool_key,
                                         const net::address_guard& guard,
                                         const upstream_request& request) {
  tcp::endpoint ep;
  auto pooled = pool.take(pool_key, &ep);
  if (!pooled) return std::nullopt;
  // The address is checked again: the policy (its guard, the rule's pins) may have changed since
  // the connection was made. (The pool remembers it; asked of the kernel only if it does not.)
  boost::system::error_code ec;
  if (ep.port() == 0) ep = (*pooled)->stream.socket().remote_endpoint(ec);
  if (ec || !still_allowed(ep, guard, request)) return std::nullopt;
  upstream = std::move(*pooled);
  return ep;
}

bool still_allowed(const tcp::endpoint& ep, const net::address_guard& guard,
                   const upstream_request& request) {
  const bool pinned_ok =
      request.pinned.empty() ||
      std::find(request.pinned.begin(), request.pinned.end(), ep.address()) != request.pinned.end();
  const bool own_ok = !request.own || request.own->check(ep.address(), ep.port()).allowed;
  return pinned_ok && own_ok && guard.check(ep.address(), ep.port(), request.extra_allow).allowed;
}

}  // namespace airlock::proxy
