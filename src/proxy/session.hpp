#pragma once
// One client connection, read top to bottom in session.cpp:
//   read request head (bounded size and time) → validate target and framing → identify the
//   agent → policy decision → resolve, guard, connect (or reuse a pooled connection) →
//   stream the request body up and the response body down → audit record and metrics.
// CONNECT requests leave the HTTP loop: the SNI of the client's first TLS ClientHello is
// checked against the CONNECT host, then the bytes are spliced.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace airlock::proxy {

class worker;

// Runs on the worker's io_context until the client connection ends.
boost::asio::awaitable<void> run_session(worker& w, boost::asio::ip::tcp::socket socket);

// A connection from a launcher's relay (the `listen.relay` listener): it starts with a PROXY
// protocol v2 header whose agent TLV names the agent, which is then the identity of every
// request on the connection, whatever the requests themselves claim. `socket` may hold a Unix
// stream socket (Asio only reads, writes, shuts down and closes it).
boost::asio::awaitable<void> run_relay_session(worker& w, boost::asio::ip::tcp::socket socket);

}  // namespace airlock::proxy
