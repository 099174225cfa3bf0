// What the proxy's contexts choose in TLS 1.3 handshakes for the cost of a new connection
// (bench/README.md, "Per-request cost, counted"): the suites, on both sides; the tickets a
// client gets.
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

// Counts the sessions (TLS 1.3: tickets) a client context is handed.
int tickets_received = 0;
int count_ticket(SSL*, SSL_SESSION*) {
  ++tickets_received;
  return 0;  // not kept
}

TEST_F(TlsHandshakeTest, ClientGetsOneTicketAndResumesWithIt) {
  auto leaf = mint("api.example.com");
  auto client = raw_client(TLS1_3_VERSION, TLS1_3_VERSION, nullptr);
  SSL_CTX_set_session_cache_mode(client->native_handle(), SSL_SESS_CACHE_CLIENT);
  SSL_CTX_sess_set_new_cb(client->native_handle(), &count_ticket);
  tickets_received = 0;
  auto first = run_handshake(*server_ctx_, leaf.get(), *client, nullptr);
  ASSERT_FALSE(first.server_ec) << first.server_ec.message();
  // Nothing follows the handshake on its own: the ticket waits for the answer, and comes with
  // it (one send, not two).
  EXPECT_EQ(first.unread_after_handshake, 0u);
  EXPECT_EQ(first.echoed, "pong");
  EXPECT_EQ(tickets_received, 1);
  ASSERT_TRUE(first.session);
  // Each resumption brings the next ticket, so a client reconnecting in sequence never runs out.
  auto second = run_handshake(*server_ctx_, leaf.get(), *client, nullptr, first.session.get());
  EXPECT_TRUE(second.resumed);
  EXPECT_EQ(tickets_received, 2);
  auto third = run_handshake(*server_ctx_, leaf.get(), *client, nullptr, second.session.get());
  EXPECT_TRUE(third.resumed);
  EXPECT_EQ(tickets_received, 3);
}

}  // namespace
}  // namespace airlock::tls
