#pragma once
// A client connection of the proxy port (or of the launcher's relay): its exchanges one after
// another, read top to bottom in session.cpp as the pipeline of DESIGN.md.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string>

#include "net/peer_binary.hpp"

namespace airlock::proxy {

class worker;

// Runs on the worker's io_context until the client connection ends. `endpoint` is the peer
// (from accept, or known otherwise) recorded as the client; a non-empty `relay_agent` is the
// identity of every request on it, whatever the requests themselves claim (the launcher's relay
// vouches for it).
// `relay_binary` is the program the relay found behind the connection (rules' `binaries`).
boost::asio::awaitable<void> serve_connection(
    worker& w, boost::asio::ip::tcp::socket socket, boost::asio::ip::tcp::endpoint endpoint,
    std::string relay_agent, std::optional<net::peer_binary> relay_binary = std::nullopt);

}  // namespace airlock::proxy
