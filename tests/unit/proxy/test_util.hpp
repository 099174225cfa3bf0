#pragma once
// Loopback sockets and a bounded io_context runner for the proxy unit tests. Only 127.0.0.1 is
// ever used.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <poll.h>

#include <chrono>
#include <functional>
#include <utility>

namespace airlock::proxy::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Two ends of one real TCP connection on 127.0.0.1 (first: the connecting side).
inline std::pair<tcp::socket, tcp::socket> loopback_pair(asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0));
  tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  return {std::move(a), std::move(b)};
}

// Runs handlers until done() or the timeout; true when done() became true. A bug in the code
// under test then fails the test instead of hanging it.
inline bool run_until(asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (io.stopped()) io.restart();
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    io.run_one_for(std::min<std::chrono::steady_clock::duration>(deadline - now,
                                                                 std::chrono::milliseconds(50)));
    if (io.stopped()) io.restart();
  }
  return true;
}

// Waits (bounded) until the socket has something to read, or EOF, so tests do not race the
// loopback delivery of a FIN or a byte.
inline bool wait_readable(const tcp::socket& s, std::chrono::milliseconds timeout) {
  pollfd p{const_cast<tcp::socket&>(s).native_handle(), POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

}  // namespace airlock::proxy::test
