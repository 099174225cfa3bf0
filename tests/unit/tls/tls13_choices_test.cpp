// What the proxy's contexts choose in TLS 1.3 handshakes for the cost of a new connection
// (bench/README.md, "Per-request cost, counted"): the suites, on both sides.
#include "tls/contexts.hpp"

#include <gtest/gtest.h>

#include "handshake_util.hpp"

namespace airlock::tls {
namespace {

using namespace test;

// A client_setup offering exactly `suites` (TLS 1.3 names, in the client's order).
std::function<void(SSL*)> offering(const char* suites) {
  return [suites](SSL* ssl) { ASSERT_EQ(SSL_set_ciphersuites(ssl, suites), 1); };
}

TEST_F(TlsHandshakeTest, ServerPrefersAes128GcmAndStillAcceptsTheOtherSuites) {
  auto leaf = mint("api.example.com");
  auto client = raw_client(TLS1_3_VERSION, TLS1_3_VERSION, nullptr);
  // OpenSSL's default client order puts AES-256 first; the server's preference decides.
  auto r = run_handshake(*server_ctx_, leaf.get(), *client,
                         offering("TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"));
  ASSERT_FALSE(r.server_ec) << r.server_ec.message();
  EXPECT_EQ(r.cipher, "TLS_AES_128_GCM_SHA256");
  for (const char* only : {"TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}) {
    auto one = run_handshake(*server_ctx_, leaf.get(), *client, offering(only));
    ASSERT_FALSE(one.server_ec) << only << ": " << one.server_ec.message();
    EXPECT_EQ(one.cipher, only);
    EXPECT_EQ(one.echoed, "pong");
  }
}

TEST_F(TlsHandshakeTest, UpstreamSideOffersAes128GcmFirst) {
  // An origin that follows the client's order (OpenSSL's default for a server) gets AES-128.
  std::string error;
  auto origin = make_server_context(error);
  ASSERT_TRUE(origin) << error;
  SSL_CTX_clear_options(origin->native_handle(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  ASSERT_EQ(SSL_CTX_set_ciphersuites(origin->native_handle(),
                                     "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:"
                                     "TLS_AES_128_GCM_SHA256"),
            1);
  auto leaf = mint("api.example.com");
  auto r = run_handshake(*origin, leaf.get(), *client_ctx_, upstream("api.example.com"));
  ASSERT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_EQ(r.cipher, "TLS_AES_128_GCM_SHA256");
}

}  // namespace
}  // namespace airlock::tls
