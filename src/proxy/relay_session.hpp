#pragma once
// A connection from a launcher's relay (the `listen.relay` listener): it starts with a PROXY
// protocol v2 header (net/proxy_protocol.hpp) whose agent TLV names the agent, which is then the
// identity of every request on the connection, whatever the requests themselves claim.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace airlock::proxy {

class worker;

// `socket` may hold a Unix stream socket (Asio only reads, writes, shuts down and closes it).
boost::asio::awaitable<void> run_relay_session(worker& w, boost::asio::ip::tcp::socket socket);

}  // namespace airlock::proxy
