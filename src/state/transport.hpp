#pragma once
// Private to the state component: one byte stream to the Redis server, over TCP, a Unix socket,
// or TLS over TCP (RFC 8446). Made afresh for every connection attempt (a TLS stream cannot be
// reused after it failed), and kept alive by the operations in flight (shared_from_this), so
// that closing it from any handler is safe.
//
// TLS: the server's certificate must chain to the configured CA bundle (or the system trust
// store) and carry the configured server name (or the host): tls::set_upstream_host, the same
// checks as the proxy's upstream connections (SNI for a DNS name, RFC 6066 section 3; the name
// or the iPAddress subjectAltName, RFC 6125). A client certificate, when configured, is in the
// context.
//
// TCP keepalive (15 s idle, then 3 probes 5 s apart, tcp(7)), so that a pub/sub connection to a
// peer that vanished without a FIN ends instead of waiting forever (it sends nothing else).
//
// @par Thread Safety
// Everything on the client's io_context thread.

#include "state/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace airlock::state {

// The TLS client context of `tls` (CA, client certificate); null with `error` set when a file
// cannot be used.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const tls_options& tls,
                                                            std::string& error);

class transport : public std::enable_shared_from_this<transport> {
 public:
  // `error` empty: connected (and, for TLS, the handshake done).
  using connected = std::function<void(const std::string& error)>;
  using transferred = std::function<void(const boost::system::error_code&, std::size_t)>;

  // `tls` non-null: TLS over TCP.
  transport(boost::asio::io_context& ioc, const client_options& options,
            std::shared_ptr<boost::asio::ssl::context> tls);

  // Resolves the host (blocking, on this thread: never a worker's), connects, and for TLS does
  // the handshake. `done` is called once, unless close() came first.
  void connect(connected done);
  // Reads into buffer() (valid until the next read).
  void read(transferred done);
  const char* buffer() const noexcept { return in_.data(); }
  // Writes all of `bytes` (which must stay valid until `done`).
  void write(const std::string& bytes, transferred done);
  // Closes the socket: operations in flight complete with operation_aborted.
  void close() noexcept;

 private:
  using tcp = boost::asio::ip::tcp;
  using unix_socket = boost::asio::local::stream_protocol::socket;
  using tls_stream = boost::asio::ssl::stream<tcp::socket>;

  // Calls f with the stream in use (exactly one of the three is set).
  template <class F>
  void with_stream(F&& f) {
    if (tls_stream_)
      f(*tls_stream_);
    else if (unix_)
      f(*unix_);
    else
      f(*tcp_);
  }
  tcp::socket* tcp_socket() noexcept;
  void keepalive() noexcept;
  void handshake(connected done);

  const client_options& options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::optional<tcp::socket> tcp_;
  std::optional<unix_socket> unix_;
  std::optional<tls_stream> tls_stream_;
  std::array<char, 16 * 1024> in_{};
};

}  // namespace airlock::state
