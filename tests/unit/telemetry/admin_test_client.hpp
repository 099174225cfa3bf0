#pragma once
// A blocking loopback HTTP client for the admin server's tests.

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <optional>
#include <string>
#include <string_view>

namespace airlock::telemetry {

// A blocking loopback client with a receive timeout, so a server bug fails the test instead of
// hanging it.
class client {
  using tcp = boost::asio::ip::tcp;

 public:
  explicit client(const tcp::endpoint& ep) : socket_(io_) {
    socket_.connect(ep);
    timeval tv{5, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  void send(std::string_view raw) {
    boost::asio::write(socket_, boost::asio::buffer(raw.data(), raw.size()));
  }

  // The next response, or nullopt when the server closed (or the read failed).
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> read(
      bool head = false) {
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.skip(head);
    parser.body_limit(16 * 1024 * 1024);
    boost::system::error_code ec;
    boost::beast::http::read(socket_, buffer_, parser, ec);
    if (ec) return std::nullopt;
    return parser.release();
  }

  auto request(std::string_view method, std::string_view target, std::string_view extra = "") {
    send(std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
         std::string(extra) + "\r\n");
    return read(method == "HEAD");
  }

  // True when the server closed the connection (EOF or reset) within the receive timeout.
  bool closed_by_peer() {
    char c;
    boost::system::error_code ec;
    std::size_t n = socket_.read_some(boost::asio::buffer(&c, 1), ec);
    return n == 0 && (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset);
  }

 private:
  boost::asio::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace airlock::telemetry
