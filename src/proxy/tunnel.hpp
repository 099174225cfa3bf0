#pragma once
// Relays bytes both ways between two connected sockets until both directions have ended
// (each EOF is passed on as a half-close) or nothing moved either way for idle_timeout.
// Back pressure: a direction does not read again until its previous write completed.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstdint>

namespace airlock::proxy {

struct tunnel_totals {
  std::uint64_t client_to_upstream = 0;
  std::uint64_t upstream_to_client = 0;
};

// `client_prefix` is sent upstream before relaying (bytes already read from the client, e.g.
// the ClientHello that was inspected for SNI).
boost::asio::awaitable<tunnel_totals> splice(boost::asio::ip::tcp::socket& client,
                                             boost::asio::ip::tcp::socket& upstream,
                                             std::chrono::milliseconds idle_timeout);

}  // namespace airlock::proxy
