#include "handshake_util.hpp"

#include <openssl/err.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <chrono>

namespace airlock::tls::test {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

handshake_result run_handshake(ssl::context& server_ctx, const leaf_certificate* leaf,
                               ssl::context& client_ctx,
                               const std::function<void(SSL*)>& client_setup, SSL_SESSION* resume,
                               bool client_closes) {
  handshake_result r;
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::address_v4::loopback(), 0));
  tcp::socket client_socket(ioc);
  tcp::socket server_socket(ioc);
  client_socket.connect(acceptor.local_endpoint());
  acceptor.accept(server_socket);
  ssl::stream<tcp::socket> server(std::move(server_socket), server_ctx);
  ssl::stream<tcp::socket> client(std::move(client_socket), client_ctx);
  if (leaf != nullptr) {
    std::string error;
    EXPECT_TRUE(use_leaf(server.native_handle(), *leaf, error)) << error;
  }
  if (client_setup) client_setup(client.native_handle());
  if (resume != nullptr) SSL_set_session(client.native_handle(), resume);

  constexpr auto tuple = net::as_tuple(net::use_awaitable);
  auto server_side = [&]() -> net::awaitable<void> {
    auto [ec] = co_await server.async_handshake(ssl::stream_base::server, tuple);
    r.server_ec = ec;
    r.server_done = true;
    if (ec) {
      server.next_layer().close();  // let the client see the failure too
      co_return;
    }
    std::array<char, 4> buf{};
    if (auto [ec, n] = co_await net::async_read(server, net::buffer(buf), tuple); ec) co_return;
    // As the proxy does once a request's head is in: the ticket leaves with the answer.
    queue_session_ticket(server.native_handle());
    if (auto [ec, n] = co_await net::async_write(server, net::buffer("pong", 4), tuple); ec) {
      co_return;
    }
    co_await server.async_shutdown(tuple);
  };
  auto client_side = [&]() -> net::awaitable<void> {
    auto [ec] = co_await client.async_handshake(ssl::stream_base::client, tuple);
    r.client_ec = ec;
    r.client_done = true;
    if (ec) {
      client.next_layer().close();
      co_return;
    }
    // What the server sent after the handshake, before anything was asked of it: it is in our
    // socket's queue by the time its handshake is done (a loopback send is delivered at once).
    net::steady_timer wait(ioc);
    while (!r.server_done) {
      wait.expires_after(1ms);
      co_await wait.async_wait(tuple);
    }
    boost::system::error_code unread_ec;
    r.unread_after_handshake = client.next_layer().available(unread_ec);
    if (auto [ec, n] = co_await net::async_write(client, net::buffer("ping", 4), tuple); ec) {
      co_return;
    }
    std::array<char, 4> buf{};
    auto [read_ec, n] = co_await net::async_read(client, net::buffer(buf), tuple);
    if (read_ec) co_return;
    r.echoed.assign(buf.data(), n);
    if (!client_closes) {
      // Closed without close_notify, as a tunnel's upstream often is.
      client.next_layer().close();
      co_return;
    }
    // A clean close_notify exchange: OpenSSL marks the session of a connection freed without
    // one as not resumable (ssl_clear_bad_session), on both sides.
    auto [shutdown_ec] = co_await client.async_shutdown(tuple);
    r.clean_shutdown = !shutdown_ec;
  };
  net::co_spawn(ioc, server_side(), net::detached);
  net::co_spawn(ioc, client_side(), net::detached);
  ioc.run_for(10s);

  SSL* c = client.native_handle();
  SSL* s = server.native_handle();
  r.client_reason = handshake_failure_reason(c, r.client_ec);
  r.client_alpn = negotiated_alpn(c);
  r.server_alpn = negotiated_alpn(s);
  if (const char* sni = SSL_get_servername(s, TLSEXT_NAMETYPE_host_name)) r.server_sni = sni;
  r.version = SSL_get_version(c);
  if (const SSL_CIPHER* cipher = SSL_get_current_cipher(c)) r.cipher = SSL_CIPHER_get_name(cipher);
  r.resumed = SSL_session_reused(c) == 1;
  r.session.reset(SSL_get1_session(c));
  return r;
}

int ssl_reason(const boost::system::error_code& ec) {
  if (ec.category() != net::error::get_ssl_category()) return 0;
  return ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
}

std::function<void(SSL*)> upstream(std::string host) {
  return [host = std::move(host)](SSL* ssl) {
    std::string error;
    ASSERT_TRUE(set_upstream_host(ssl, host, error)) << error;
  };
}

}  // namespace airlock::tls::test
