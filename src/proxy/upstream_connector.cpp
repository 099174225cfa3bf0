#include "proxy/upstream_connector.hpp"

#include "core/str_cat.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <vector>

namespace airlock::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

std::string to_string(const tcp::endpoint& ep) {
  const auto& a = ep.address();
  return a.is_v6() ? core::str_cat('[', a.to_string(), "]:", ep.port())
                   : core::str_cat(a.to_string(), ':', ep.port());
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
    tcp::resolver resolver(executor);
    asio::steady_timer timer(executor, request.dns_timeout);
    // The resolver runs getaddrinfo on asio's private thread; a timeout abandons the answer.
    // Named, not a temporary in the co_await expression (see session.cpp send_answer).
    const std::string service = std::to_string(request.port);
    auto result = co_await (resolver.async_resolve(host.text, service, use_tuple) ||
                            timer.async_wait(use_tuple));
    if (result.index() == 1) {
      out.error = core::errc::dns_timeout;
      out.detail = core::str_cat("resolving ", host.text, " timed out");
      co_return out;
    }
    auto [ec, results] = std::get<0>(std::move(result));
    if (ec || results.empty()) {
      out.error = core::errc::dns_error;
      out.detail = core::str_cat("cannot resolve ", host.text, ": ",
                                 ec ? ec.message() : std::string("no addresses"));
      co_return out;
    }
    for (const auto& r : results)
      endpoints.push_back(r.endpoint());
  }

  // Refuse when ANY address is prohibited: a name that mixes a public and a private address
  // is an attack on whoever picks the address, so it is not reached at all.
  for (const auto& ep : endpoints) {
    auto verdict = guard.check(ep.address(), ep.port(), request.extra_allow);
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
  stream.expires_after(request.connect_timeout);
  auto [ec, ep] = co_await stream.async_connect(endpoints, use_tuple);
  stream.expires_never();
  if (ec) {
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

}  // namespace airlock::proxy
