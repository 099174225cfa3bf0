#pragma once
// The proxy port's workers: one listening socket per worker on the same port (SO_REUSEPORT, the
// kernel balances new connections among them), each worker's accept loop, which refuses a
// connection over the caps with one short 503, and its thread.

#include "proxy/worker.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <vector>

namespace airlock::proxy {

// `threads` workers listening on `listen` (port 0: the first picks a free port, the others
// join it). Returns them with `bound` set to the address they listen on; throws
// boost::system::system_error when a socket cannot be bound.
std::vector<std::unique_ptr<worker>> listen_workers(shared_state& shared,
                                                    const boost::asio::ip::tcp::endpoint& listen,
                                                    unsigned threads,
                                                    boost::asio::ip::tcp::endpoint& bound);

// Starts each worker's accept loop, its timer floor, and its thread (which runs its io_context
// until the work is released; a handler that throws ends only its session).
void run_workers(std::vector<std::unique_ptr<worker>>& workers);

}  // namespace airlock::proxy
