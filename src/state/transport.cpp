#include "state/transport.hpp"

#include "core/str_cat.hpp"
#include "tls/contexts.hpp"
#include "tls/openssl_util.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace airlock::state {

namespace asio = boost::asio;

std::shared_ptr<asio::ssl::context> make_tls_context(const tls_options& tls, std::string& error) {
  // The upstream context of the proxy: TLS 1.2 minimum, its suites, peer verification against
  // the bundle (or the system trust store).
  auto ctx = airlock::tls::make_client_context(tls.ca_file, error);
  if (!ctx) {
    error = core::str_cat("state.tls: ", error);
    return nullptr;
  }
  if (!tls.cert_file.empty()) {
    boost::system::error_code ec;
    ctx->use_certificate_chain_file(tls.cert_file, ec);
    if (!ec) ctx->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
    if (ec) {
      error = core::str_cat("client certificate ", tls.cert_file, " / ", tls.key_file,
                            ": cannot load (", airlock::tls::openssl_error_string(), ")");
      return nullptr;
    }
  }
  return ctx;
}

transport::transport(asio::io_context& ioc, const client_options& options,
                     std::shared_ptr<asio::ssl::context> tls)
    : options_(options), tls_(std::move(tls)) {
  if (!options_.unix_path.empty())
    unix_.emplace(ioc);
  else if (tls_)
    tls_stream_.emplace(ioc, *tls_);
  else
    tcp_.emplace(ioc);
}

transport::tcp::socket* transport::tcp_socket() noexcept {
  if (tls_stream_) return &tls_stream_->next_layer();
  return tcp_ ? &*tcp_ : nullptr;
}

void transport::keepalive() noexcept {
  tcp::socket* s = tcp_socket();
  boost::system::error_code ignored;
  s->set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = s->native_handle();
  const int idle = 15, interval = 5, count = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

void transport::connect(connected done) {
  auto self = shared_from_this();
  if (unix_) {
    unix_->async_connect(asio::local::stream_protocol::endpoint(options_.unix_path),
                         [self, done = std::move(done)](const boost::system::error_code& ec) {
                           done(ec ? ec.message() : std::string());
                         });
    return;
  }
  boost::system::error_code ec;
  tcp::resolver resolver(tcp_socket()->get_executor());
  const auto endpoints = resolver.resolve(options_.host, std::to_string(options_.port), ec);
  if (ec) {
    done(core::str_cat("cannot resolve ", options_.host, ": ", ec.message()));
    return;
  }
  asio::async_connect(*tcp_socket(), endpoints,
                      [self, done = std::move(done)](const boost::system::error_code& e,
                                                     const tcp::endpoint&) mutable {
                        if (e) {
                          done(e.message());
                          return;
                        }
                        self->keepalive();
                        if (self->tls_stream_)
                          self->handshake(std::move(done));
                        else
                          done({});
                      });
}

void transport::handshake(connected done) {
  SSL* ssl = tls_stream_->native_handle();
  const std::string& name = options_.tls && !options_.tls->server_name.empty()
                                ? options_.tls->server_name
                                : options_.host;
  std::string error;
  if (!airlock::tls::set_upstream_host(ssl, name, error)) {
    done(core::str_cat("TLS: ", error));
    return;
  }
  // The shared context offers ALPN "http/1.1" for the proxy's upstreams; Redis is not HTTP.
  SSL_set_alpn_protos(ssl, nullptr, 0);
  tls_stream_->async_handshake(
      asio::ssl::stream_base::client,
      [self = shared_from_this(), done = std::move(done)](const boost::system::error_code& ec) {
        if (ec)
          done(core::str_cat("TLS handshake: ", airlock::tls::handshake_failure_reason(
                                                    self->tls_stream_->native_handle(), ec)));
        else
          done({});
      });
}

void transport::read(transferred done) {
  with_stream([&](auto& s) {
    s.async_read_some(asio::buffer(in_),
                      [self = shared_from_this(), done = std::move(done)](
                          const boost::system::error_code& ec, std::size_t n) { done(ec, n); });
  });
}

void transport::write(const std::string& bytes, transferred done) {
  with_stream([&](auto& s) {
    asio::async_write(s, asio::buffer(bytes),
                      [self = shared_from_this(), done = std::move(done)](
                          const boost::system::error_code& ec, std::size_t n) { done(ec, n); });
  });
}

void transport::close() noexcept {
  boost::system::error_code ignored;
  if (unix_) unix_->close(ignored);
  if (tcp::socket* s = tcp_socket()) s->close(ignored);
}

}  // namespace airlock::state
