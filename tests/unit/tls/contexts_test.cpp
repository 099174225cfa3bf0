#include "tls/contexts.hpp"

#include "tls/upstream_sessions.hpp"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include <chrono>

#include "handshake_util.hpp"

namespace airlock::tls {
namespace {

using namespace test;
using namespace std::chrono_literals;

TEST_F(TlsHandshakeTest, ClientVerifiesTheMintedLeafAndNegotiatesHttp11) {
  auto leaf = mint("api.example.com");
  auto r = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("api.example.com"));
  ASSERT_TRUE(r.client_done && r.server_done);
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_FALSE(r.server_ec) << r.server_ec.message();
  EXPECT_EQ(r.client_alpn, "http/1.1");
  EXPECT_EQ(r.server_alpn, "http/1.1");
  EXPECT_EQ(r.server_sni, "api.example.com");
  EXPECT_EQ(r.version, "TLSv1.3");
  EXPECT_EQ(r.echoed, "pong");
  EXPECT_TRUE(r.clean_shutdown);
  EXPECT_EQ(r.client_reason, "");
}

TEST_F(TlsHandshakeTest, IpLiteralIsVerifiedWithoutSni) {
  auto leaf = mint("127.0.0.1");
  auto r = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("127.0.0.1"));
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.server_sni, "");  // RFC 6066 section 3: no IP literals in SNI
  EXPECT_EQ(r.echoed, "pong");

  auto wrong = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("127.0.0.2"));
  EXPECT_TRUE(wrong.client_ec);
  EXPECT_EQ(wrong.client_reason, "certificate verify failed: IP address mismatch");
}

TEST_F(TlsHandshakeTest, WrongNameFailsWithAReadableReason) {
  auto leaf = mint("api.example.com");
  auto r = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("other.example.com"));
  EXPECT_TRUE(r.client_ec);
  EXPECT_TRUE(r.server_ec);  // the client's alert ends the server side too
  EXPECT_EQ(r.client_reason, "certificate verify failed: hostname mismatch");
  EXPECT_EQ(r.echoed, "");
}

TEST_F(TlsHandshakeTest, ClientThatDoesNotTrustTheCaFails) {
  auto leaf = mint("api.example.com");
  // The system trust store does not hold our fresh CA.
  std::string error;
  auto system_ctx = make_client_context({}, error);
  ASSERT_TRUE(system_ctx) << error;
  auto r = run_handshake(*server_ctx_, leaf.get(), *system_ctx, upstream("api.example.com"));
  EXPECT_TRUE(r.client_ec);
  // The server sends the leaf alone (the CA is a root: a client that trusts it holds it), so
  // the client finds no issuer it trusts.
  EXPECT_EQ(r.client_reason, "certificate verify failed: unable to get local issuer certificate");

  // Nor does a bundle with another CA.
  test::temp_dir other;
  ASSERT_TRUE(test::make_ca(other.path()));
  auto other_ctx = make_client_context(other / "ca.crt", error);
  ASSERT_TRUE(other_ctx) << error;
  r = run_handshake(*server_ctx_, leaf.get(), *other_ctx, upstream("api.example.com"));
  EXPECT_TRUE(r.client_ec);
  EXPECT_EQ(r.client_reason, "certificate verify failed: unable to get local issuer certificate");
}

TEST_F(TlsHandshakeTest, ExpiredLeafIsReported) {
  std::string error;
  auto old = minter_->mint("api.example.com", error, std::chrono::system_clock::now() - 8 * 24h);
  ASSERT_TRUE(old) << error;
  auto r = run_handshake(*server_ctx_, old.get(), *client_ctx_, upstream("api.example.com"));
  EXPECT_TRUE(r.client_ec);
  EXPECT_EQ(r.client_reason, "certificate verify failed: certificate has expired");
}

TEST_F(TlsHandshakeTest, ServerWithoutALeafFailsClosed) {
  auto r = run_handshake(*server_ctx_, nullptr, *client_ctx_, upstream("api.example.com"));
  EXPECT_TRUE(r.server_ec);
  EXPECT_TRUE(r.client_ec);
}

TEST_F(TlsHandshakeTest, Tls11ClientIsRefused) {
  auto leaf = mint("api.example.com");
  // SECLEVEL=0 so that the client itself is willing to speak TLS 1.1 (OpenSSL 3 refuses it at
  // level 1 and up); the refusal must then come from our server.
  auto old_client = raw_client(TLS1_VERSION, TLS1_1_VERSION, "DEFAULT:@SECLEVEL=0");
  auto r = run_handshake(*server_ctx_, leaf.get(), *old_client, nullptr);
  EXPECT_TRUE(r.server_ec);
  EXPECT_EQ(ssl_reason(r.server_ec), SSL_R_UNSUPPORTED_PROTOCOL) << r.server_ec.message();
  EXPECT_EQ(ssl_reason(r.client_ec), SSL_R_TLSV1_ALERT_PROTOCOL_VERSION) << r.client_ec.message();

  // Control: the same client allowed TLS 1.2 gets in, with an AEAD suite.
  auto tls12_client = raw_client(TLS1_VERSION, TLS1_2_VERSION, "DEFAULT:@SECLEVEL=0");
  r = run_handshake(*server_ctx_, leaf.get(), *tls12_client, nullptr);
  EXPECT_FALSE(r.server_ec) << r.server_ec.message();
  EXPECT_EQ(r.version, "TLSv1.2");
  EXPECT_TRUE(r.cipher.starts_with("ECDHE-ECDSA-")) << r.cipher;
  EXPECT_TRUE(r.cipher.find("GCM") != std::string::npos ||
              r.cipher.find("CHACHA20") != std::string::npos)
      << r.cipher;
}

TEST_F(TlsHandshakeTest, Tls12ClientOfferingOnlyCbcIsRefused) {
  auto leaf = mint("api.example.com");
  auto cbc_client = raw_client(TLS1_2_VERSION, TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA256");
  auto r = run_handshake(*server_ctx_, leaf.get(), *cbc_client, nullptr);
  EXPECT_TRUE(r.server_ec);
  EXPECT_EQ(ssl_reason(r.server_ec), SSL_R_NO_SHARED_CIPHER) << r.server_ec.message();
}

TEST_F(TlsHandshakeTest, H2OnlyClientGetsNoAlpnAndH2PlusHttp11GetsHttp11) {
  auto leaf = mint("api.example.com");
  static constexpr unsigned char h2_only[] = {2, 'h', '2'};
  auto r = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, [](SSL* ssl) {
    std::string error;
    ASSERT_TRUE(set_upstream_host(ssl, "api.example.com", error)) << error;
    ASSERT_EQ(SSL_set_alpn_protos(ssl, h2_only, sizeof h2_only), 0);
  });
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.client_alpn, "");
  EXPECT_EQ(r.server_alpn, "");

  static constexpr unsigned char both[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  r = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, [](SSL* ssl) {
    std::string error;
    ASSERT_TRUE(set_upstream_host(ssl, "api.example.com", error)) << error;
    ASSERT_EQ(SSL_set_alpn_protos(ssl, both, sizeof both), 0);
  });
  EXPECT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.client_alpn, "http/1.1");

  // No ALPN at all is fine too.
  auto plain = raw_client(TLS1_2_VERSION, TLS1_3_VERSION, nullptr);
  r = run_handshake(*server_ctx_, leaf.get(), *plain, nullptr);
  EXPECT_FALSE(r.server_ec) << r.server_ec.message();
  EXPECT_EQ(r.server_alpn, "");
}

TEST_F(TlsHandshakeTest, SessionsResume) {
  auto leaf = mint("api.example.com");
  for (int max_version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    SCOPED_TRACE(max_version);
    SSL_CTX_set_max_proto_version(client_ctx_->native_handle(), max_version);
    // A client keeps its own session cache; resumption is offered by passing the session.
    auto first = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("api.example.com"));
    ASSERT_FALSE(first.client_ec) << first.client_reason;
    ASSERT_TRUE(first.session);
    EXPECT_FALSE(first.resumed);
    auto second = run_handshake(*server_ctx_, leaf.get(), *client_ctx_, upstream("api.example.com"),
                                first.session.get());
    ASSERT_FALSE(second.client_ec) << second.client_reason;
    EXPECT_TRUE(second.resumed);
    EXPECT_EQ(second.echoed, "pong");
  }
}

TEST_F(TlsHandshakeTest, UpstreamSessionCacheResumesOnlyTheSameName) {
  upstream_sessions cache;
  ASSERT_TRUE(cache.attach(client_ctx_->native_handle()));
  auto through_cache = [&cache](std::string host) {
    return [&cache, host = std::move(host)](SSL* ssl) {
      std::string error;
      ASSERT_TRUE(set_upstream_host(ssl, host, error)) << error;
      cache.resume(ssl);
    };
  };
  auto api = mint("api.example.com");
  auto first =
      run_handshake(*server_ctx_, api.get(), *client_ctx_, through_cache("api.example.com"));
  ASSERT_FALSE(first.client_ec) << first.client_reason;
  EXPECT_FALSE(first.resumed);
  EXPECT_EQ(cache.size(), 1u);
  auto second =
      run_handshake(*server_ctx_, api.get(), *client_ctx_, through_cache("api.example.com"));
  ASSERT_FALSE(second.client_ec) << second.client_reason;
  EXPECT_TRUE(second.resumed);
  EXPECT_EQ(second.echoed, "pong");
  // Another name is never offered api's session: a full, verified handshake.
  auto other = mint("other.example.com");
  auto third =
      run_handshake(*server_ctx_, other.get(), *client_ctx_, through_cache("other.example.com"));
  ASSERT_FALSE(third.client_ec) << third.client_reason;
  EXPECT_FALSE(third.resumed);
  EXPECT_EQ(cache.size(), 2u);
  // A handshake that fails verification leaves nothing behind to resume.
  auto wrong = run_handshake(*server_ctx_, other.get(), *client_ctx_, through_cache("x.example"));
  EXPECT_TRUE(wrong.client_ec);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(TlsHandshakeTest, UpstreamSessionCacheResumesAfterAConnectionEndedWithoutCloseNotify) {
  // Found by profiling intercepted connections: every upstream handshake was a full one,
  // because the cached session was the connection's own and OpenSSL marks it not resumable
  // when the connection is freed without a close_notify.
  upstream_sessions cache;
  ASSERT_TRUE(cache.attach(client_ctx_->native_handle()));
  auto setup = [&cache](SSL* ssl) {
    std::string error;
    ASSERT_TRUE(set_upstream_host(ssl, "api.example.com", error)) << error;
    cache.resume(ssl);
  };
  auto api = mint("api.example.com");
  auto first = run_handshake(*server_ctx_, api.get(), *client_ctx_, setup, nullptr, false);
  ASSERT_FALSE(first.client_ec) << first.client_reason;
  EXPECT_FALSE(first.clean_shutdown);
  EXPECT_EQ(cache.size(), 1u);
  auto second = run_handshake(*server_ctx_, api.get(), *client_ctx_, setup, nullptr, false);
  ASSERT_FALSE(second.client_ec) << second.client_reason;
  EXPECT_TRUE(second.resumed);
  auto third = run_handshake(*server_ctx_, api.get(), *client_ctx_, setup, nullptr, false);
  ASSERT_FALSE(third.client_ec) << third.client_reason;
  EXPECT_TRUE(third.resumed);
}

TEST(TlsContexts, ClientContextNamesAMissingBundle) {
  std::string error;
  EXPECT_FALSE(make_client_context("/nonexistent/bundle.pem", error));
  EXPECT_NE(error.find("/nonexistent/bundle.pem"), std::string::npos) << error;
}

TEST(TlsContexts, SetUpstreamHostRejectsBadNames) {
  std::string error;
  auto ctx = make_client_context({}, error);
  ASSERT_TRUE(ctx) << error;
  std::unique_ptr<SSL, openssl_deleter<&SSL_free>> ssl(SSL_new(ctx->native_handle()));
  for (std::string_view bad : {"", "*.example.com", "a b", "a.com\r\nX: y"}) {
    EXPECT_FALSE(set_upstream_host(ssl.get(), bad, error)) << bad;
  }
  EXPECT_EQ(handshake_failure_reason(ssl.get(), {}), "");
  EXPECT_EQ(verify_failure_reason(ssl.get()), "");
  EXPECT_EQ(negotiated_alpn(ssl.get()), "");
}

}  // namespace
}  // namespace airlock::tls
