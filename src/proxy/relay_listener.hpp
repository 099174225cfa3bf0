#pragma once
// listen.relay: the launcher's relay connects here (a Unix socket only the launcher may reach,
// or host:port). One acceptor on its own thread; each connection goes to the next worker,
// which reads the PROXY v2 header and serves it (run_relay_session).

#include "proxy/server.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace airlock::proxy {

// A listen address: an IP literal (v6 in brackets) and a port; port 0 means any free port.
std::optional<boost::asio::ip::tcp::endpoint> parse_listen(std::string_view text);

// A Unix socket is handed over as a file descriptor in a tcp::socket: sessions only read,
// write, shut down and close.
struct server::relay_listener {
  boost::asio::io_context ioc{1};
  std::optional<boost::asio::local::stream_protocol::acceptor> unix_acceptor;
  std::optional<boost::asio::ip::tcp::acceptor> tcp_acceptor;
  std::string unix_path;  // removed again at shutdown
  std::thread thread;
  std::size_t next = 0;

  void hand_over(std::vector<std::unique_ptr<worker>>& workers, int fd, bool v6);
  template <class Acceptor>
  boost::asio::awaitable<void> accept_loop(Acceptor& acceptor,
                                           std::vector<std::unique_ptr<worker>>& workers);
};

}  // namespace airlock::proxy
