// The Redis client over TLS (state/transport.hpp) against a real redis-server with --tls-port:
// the server's certificate verified against the CA and the name, a wrong CA or name refused
// (the store stays unavailable and says why), a client certificate when the server asks for
// one, and a CA file that cannot be read.
#include "state/client.hpp"

#include "client_test_util.hpp"
#include "redis_server.hpp"
#include "test_certs.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace airlock::state {
namespace {

using namespace std::chrono_literals;
using test::call;
using test::eventually;
using test::redis_server;
using test::test_certs;

client_options tls_options_for(std::uint16_t port, const std::string& ca) {
  client_options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = 2s;  // a TLS handshake under the sanitizers
  o.min_backoff = 20ms;
  o.max_backoff = 200ms;
  o.tls = tls_options{ca, "", "", ""};
  return o;
}

// A client expected never to come up: true once it has reported itself down.
bool reported_down(client_options o) {
  std::atomic<int> downs{0};
  o.on_mode_change = [&](bool up) {
    if (!up) ++downs;
  };
  client c(o);
  const bool down = eventually([&] { return downs.load() >= 1; });
  // A few retries later it is still down (the refusal is not a race it may win).
  std::this_thread::sleep_for(300ms);
  return down && !c.up() && c.mode_changes() == 0;
}

TEST(StateTls, CommandsAndPubSubOverVerifiedTls) {
  test_certs certs("ok");
  ASSERT_TRUE(certs.ok());
  redis_server server(certs.server_args(false), true);
  client c(tls_options_for(server.port(), certs.ca()));
  EXPECT_EQ(c.where(), "tls:127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  const std::string value("a\0b\r\nc", 6);
  EXPECT_EQ(call(c, {"SET", "k", value}).what, reply::kind::status);
  EXPECT_EQ(call(c, {"GET", "k"}).text, value);

  std::promise<std::string> got;
  c.subscribe("ch", [&](std::string_view, std::string_view text) {
    static std::atomic<bool> once{false};
    if (!once.exchange(true)) got.set_value(std::string(text));
  });
  auto f = got.get_future();
  // Published until the subscription is in place (bounded).
  for (int i = 0; i < 200 && f.wait_for(20ms) != std::future_status::ready; ++i)
    call(c, {"PUBLISH", "ch", "hello"});
  ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(f.get(), "hello");
}

TEST(StateTls, ServerNameIsVerified) {
  test_certs certs("name");
  ASSERT_TRUE(certs.ok());
  redis_server server(certs.server_args(false), true);
  client_options named = tls_options_for(server.port(), certs.ca());
  named.tls->server_name = "redis.test";  // in the certificate
  client c(named);
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  client_options other = named;
  other.tls->server_name = "other.test";  // not in it
  EXPECT_TRUE(reported_down(other));
}

TEST(StateTls, WrongCaIsRefused) {
  test_certs certs("server");
  test_certs stranger("stranger");
  ASSERT_TRUE(certs.ok() && stranger.ok());
  redis_server server(certs.server_args(false), true);
  EXPECT_TRUE(reported_down(tls_options_for(server.port(), stranger.ca())));
  // Plain text to a TLS port is not "up" either.
  client_options plain = tls_options_for(server.port(), "");
  plain.tls.reset();
  plain.timeout = 300ms;
  EXPECT_TRUE(reported_down(plain));
}

TEST(StateTls, ClientCertificateWhenTheServerAsksForOne) {
  test_certs certs("client");
  ASSERT_TRUE(certs.ok());
  redis_server server(certs.server_args(true), true);
  client_options with = tls_options_for(server.port(), certs.ca());
  with.tls->cert_file = certs.cert();
  with.tls->key_file = certs.key();
  client c(with);
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(call(c, {"PING"}).text, "PONG");
  // Without one, the server ends the connection: never up.
  EXPECT_TRUE(reported_down(tls_options_for(server.port(), certs.ca())));
}

TEST(StateTls, UnreadableCaKeepsTheStoreDown) {
  EXPECT_TRUE(reported_down(tls_options_for(test::free_port(), "/nonexistent/ca.pem")));
}

}  // namespace
}  // namespace airlock::state
