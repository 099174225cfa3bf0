// The client-facing context's rotated ticket keys, through real handshakes: a ticket resumes
// while its key is current, is renewed while its key is the previous one, and is refused (a full
// handshake) once its key is retired.
#include "tls/ticket_keys.hpp"

#include <gtest/gtest.h>

#include "handshake_util.hpp"

namespace airlock::tls {
namespace {

using namespace test;
using namespace std::chrono_literals;

class TicketKeysTest : public TlsHandshakeTest {
 protected:
  void SetUp() override {
    TlsHandshakeTest::SetUp();
    auto keys = std::make_unique<ticket_keys>(1h, [this] { return now_; });
    keys_ = keys.get();
    ASSERT_TRUE(ticket_keys::install(server_ctx_->native_handle(), std::move(keys)));
    leaf_ = mint("api.example.com");
  }

  handshake_result connect(SSL_SESSION* resume = nullptr) {
    return run_handshake(*server_ctx_, leaf_.get(), *client_ctx_, upstream("api.example.com"),
                         resume);
  }

  ticket_keys::clock::time_point now_ = ticket_keys::clock::now();
  ticket_keys* keys_ = nullptr;  // owned by server_ctx_
  std::shared_ptr<const leaf_certificate> leaf_;
};

TEST_F(TicketKeysTest, TicketLivesOnePeriodCurrentAndOneMoreToBeRenewed) {
  EXPECT_EQ(SSL_CTX_get_timeout(server_ctx_->native_handle()), 3600);  // the lifetime announced
  auto first = connect();
  ASSERT_FALSE(first.client_ec) << first.client_reason;
  ASSERT_TRUE(first.session);
  EXPECT_EQ(keys_->generation(), 1u);

  now_ += 30min;  // the key is current
  auto same_key = connect(first.session.get());
  EXPECT_TRUE(same_key.resumed);
  EXPECT_EQ(keys_->generation(), 1u);

  now_ += 60min;  // 1.5 periods: a new key encrypts; the old one still reads, and renews
  auto renewed = connect(first.session.get());
  ASSERT_FALSE(renewed.client_ec) << renewed.client_reason;
  EXPECT_TRUE(renewed.resumed);
  EXPECT_EQ(keys_->generation(), 2u);
  ASSERT_TRUE(renewed.session);

  now_ += 30min;  // two periods after the first key was made: it is gone
  auto retired = connect(first.session.get());
  ASSERT_FALSE(retired.client_ec) << retired.client_reason;
  EXPECT_FALSE(retired.resumed);
  EXPECT_EQ(retired.echoed, "pong");
  // The ticket the renewal brought is under the current key.
  auto fresh = connect(renewed.session.get());
  EXPECT_TRUE(fresh.resumed);
}

TEST_F(TicketKeysTest, Tls12TicketsUseTheSameKeys) {
  SSL_CTX_set_max_proto_version(client_ctx_->native_handle(), TLS1_2_VERSION);
  auto first = connect();
  ASSERT_FALSE(first.client_ec) << first.client_reason;
  ASSERT_EQ(first.version, "TLSv1.2");
  ASSERT_TRUE(first.session);
  EXPECT_TRUE(SSL_SESSION_has_ticket(first.session.get()));
  auto second = connect(first.session.get());
  EXPECT_TRUE(second.resumed);
  now_ += 2h;
  // Its key retired: a full handshake (OpenSSL does not fall back to the session id when the
  // client offered a ticket).
  auto third = connect(first.session.get());
  ASSERT_FALSE(third.client_ec) << third.client_reason;
  EXPECT_FALSE(third.resumed);
  EXPECT_EQ(keys_->generation(), 2u);
}

TEST_F(TicketKeysTest, AnotherContextsTicketIsNotRead) {
  auto first = connect();
  ASSERT_TRUE(first.session);
  // A second proxy (or one restarted) has keys of its own: a full handshake, no error.
  std::string error;
  auto other = make_server_context(error);
  ASSERT_TRUE(other) << error;
  auto r = run_handshake(*other, leaf_.get(), *client_ctx_, upstream("api.example.com"),
                         first.session.get());
  ASSERT_FALSE(r.client_ec) << r.client_reason;
  EXPECT_FALSE(r.resumed);
}

}  // namespace
}  // namespace airlock::tls
