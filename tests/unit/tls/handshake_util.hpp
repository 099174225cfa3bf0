#pragma once
// The tls tests' real handshakes: one client and one server stream over a loopback TCP
// connection, and the fixture with a CA, its leaf minter (MinterTest) and the proxy's two
// contexts.

#include "tls/ca.hpp"
#include "tls/contexts.hpp"
#include "tls/leaf_minter.hpp"
#include "tls/openssl_util.hpp"

#include <gtest/gtest.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include <functional>
#include <memory>
#include <string>

#include "minter_fixture.hpp"
#include "test_util.hpp"

namespace airlock::tls::test {

namespace ssl = boost::asio::ssl;
using session_ptr = std::unique_ptr<SSL_SESSION, openssl_deleter<&SSL_SESSION_free>>;

struct handshake_result {
  boost::system::error_code server_ec;
  boost::system::error_code client_ec;
  bool server_done = false;
  bool client_done = false;
  std::string client_reason;  // handshake_failure_reason on the client side
  std::string client_alpn;
  std::string server_alpn;
  std::string server_sni;  // what the server received, "" when none
  std::string version;
  std::string cipher;
  bool resumed = false;
  std::string echoed;  // what the client read back after the handshake ("pong")
  // Bytes the server had sent once both handshakes were done, before the client's "ping".
  std::size_t unread_after_handshake = 0;
  bool clean_shutdown = false;
  session_ptr session;
};

// One handshake over a real loopback TCP connection, both ends in one io_context (bounded
// to 10 s). After a successful handshake the client sends "ping" and the server answers
// "pong" with the TLS 1.3 session ticket queued before it (queue_session_ticket), as the proxy
// answers a request. client_setup runs on
// the client's SSL before the handshake (the server name, a session cache, ...).
handshake_result run_handshake(ssl::context& server_ctx, const leaf_certificate* leaf,
                               ssl::context& client_ctx,
                               const std::function<void(SSL*)>& client_setup,
                               SSL_SESSION* resume = nullptr, bool client_closes = true);

// The OpenSSL reason code inside an asio ssl error_code (0 for other categories).
int ssl_reason(const boost::system::error_code& ec);

// A client_setup that names the upstream host (set_upstream_host).
std::function<void(SSL*)> upstream(std::string host);

class TlsHandshakeTest : public MinterTest {
 protected:
  void SetUp() override {
    MinterTest::SetUp();
    if (HasFatalFailure()) return;
    std::string error;
    server_ctx_ = make_server_context(error);
    ASSERT_TRUE(server_ctx_) << error;
    client_ctx_ = make_client_context(dir_.path() / "ca.crt", error);
    ASSERT_TRUE(client_ctx_) << error;
  }

  // A client context that verifies nothing and speaks exactly [min, max].
  static std::unique_ptr<ssl::context> raw_client(int min_version, int max_version,
                                                  const char* ciphers) {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    SSL_CTX* n = ctx->native_handle();
    SSL_CTX_set_min_proto_version(n, min_version);
    SSL_CTX_set_max_proto_version(n, max_version);
    if (ciphers != nullptr) {
      EXPECT_EQ(SSL_CTX_set_cipher_list(n, ciphers), 1);
    }
    SSL_CTX_set_verify(n, SSL_VERIFY_NONE, nullptr);
    return ctx;
  }

  std::shared_ptr<ssl::context> server_ctx_;
  std::shared_ptr<ssl::context> client_ctx_;
};

}  // namespace airlock::tls::test
