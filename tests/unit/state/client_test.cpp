// The Redis client (state/client.hpp) against a real redis-server: commands, binary-safe
// arguments, pub/sub, AUTH, and the failure modes (store down at start, a peer that never
// answers, a server stopped and started again). No timing assertions: conditions are awaited
// with generous deadlines.
#include "state/client.hpp"

#include "client_test_util.hpp"
#include "redis_server.hpp"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

namespace airlock::state {
namespace {

using namespace std::chrono_literals;
using test::call;
using test::eventually;
using test::redis_server;

client_options options_for(std::uint16_t port) {
  client_options o;
  o.host = "127.0.0.1";
  o.port = port;
  o.timeout = 200ms;
  o.min_backoff = 20ms;
  o.max_backoff = 200ms;
  return o;
}

TEST(StateClient, CommandsRoundTripBinarySafe) {
  redis_server server;
  client c(options_for(server.port()));
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  const std::string value("a\0b\r\nc", 6);
  EXPECT_EQ(call(c, {"SET", "k", value}).what, reply::kind::status);
  const reply got = call(c, {"GET", "k"});
  EXPECT_EQ(got.what, reply::kind::string);
  EXPECT_EQ(got.text, value);
  EXPECT_EQ(call(c, {"INCRBY", "n", "5"}).integer, 5);
  EXPECT_EQ(call(c, {"GET", "missing"}).what, reply::kind::nil);
  const reply err = call(c, {"NOSUCHCOMMAND"});
  EXPECT_EQ(err.what, reply::kind::error);
  EXPECT_FALSE(err.ok());
  const reply arr = call(c, {"EVAL", "return {1, 'x', {2}}", "0"});
  ASSERT_EQ(arr.what, reply::kind::array);
  ASSERT_EQ(arr.elements.size(), 3u);
  EXPECT_EQ(arr.elements[1].text, "x");
  EXPECT_EQ(arr.elements[2].elements[0].integer, 2);
}

TEST(StateClient, StoreDownAtStartAnswersAtOnceAndReportsIt) {
  std::atomic<int> downs{0};
  client_options o = options_for(test::free_port());  // nothing listens there
  o.on_mode_change = [&](bool up) {
    if (!up) ++downs;
  };
  client c(o);
  ASSERT_TRUE(eventually([&] { return downs.load() == 1; }));
  EXPECT_FALSE(c.up());
  EXPECT_EQ(call(c, {"PING"}).what, reply::kind::unavailable);
  // Retries while down are not changes of mode.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(downs.load(), 1);
  EXPECT_EQ(c.mode_changes(), 0u);
}

TEST(StateClient, PeerThatNeverAnswersTimesOutAndDrops) {
  // A stuck server: CLIENT PAUSE holds every client's commands for 2 s (Redis 6.2+).
  redis_server server;
  client c(options_for(server.port()));
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(call(c, {"CLIENT", "PAUSE", "2000", "ALL"}).text, "OK");
  const auto started = std::chrono::steady_clock::now();
  const reply r = call(c, {"PING"});
  EXPECT_EQ(r.what, reply::kind::unavailable);
  // Bounded by the client's timeout (200 ms), far below the test's own 10 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_TRUE(eventually([&] { return c.mode_changes() >= 1; }));
  // Up again by itself once the server answers (a reconnect answers PING first).
  EXPECT_TRUE(eventually([&] { return c.up(); }));
}

TEST(StateClient, ListenerThatNeverAnswersIsNeverUp) {
  // Accepts (the kernel's backlog) and never answers: the first PING times out.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::atomic<int> downs{0};
  client_options o = options_for(ntohs(a.sin_port));
  o.on_mode_change = [&](bool up) {
    if (!up) ++downs;
  };
  client c(o);
  ASSERT_TRUE(eventually([&] { return downs.load() >= 1; }));
  EXPECT_FALSE(c.up());
  EXPECT_EQ(c.mode_changes(), 0u);
  ::close(fd);
}

TEST(StateClient, ReconnectsByItselfAfterTheServerComesBack) {
  redis_server server;
  std::mutex m;
  std::vector<bool> modes;
  client_options o = options_for(server.port());
  o.on_mode_change = [&](bool up) {
    std::lock_guard lock(m);
    modes.push_back(up);
  };
  client c(o);
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  server.stop();
  ASSERT_TRUE(eventually([&] { return !c.up(); }));
  EXPECT_EQ(call(c, {"PING"}).what, reply::kind::unavailable);
  server.start();
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(call(c, {"PING"}).text, "PONG");
  std::lock_guard lock(m);
  EXPECT_EQ(modes, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(c.mode_changes(), 2u);
}

TEST(StateClient, PubSubDeliversAndResubscribesAfterAReconnect) {
  redis_server server;
  client c(options_for(server.port()));
  std::mutex m;
  std::vector<std::string> got;
  c.subscribe("airlock:test", [&](std::string_view ch, std::string_view text) {
    std::lock_guard lock(m);
    got.push_back(std::string(ch) + "=" + std::string(text));
  });
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  auto count = [&] {
    std::lock_guard lock(m);
    return got.size();
  };
  // PUBLISH answers how many subscribers got it: wait until the subscription is in place.
  ASSERT_TRUE(eventually([&] { return call(c, {"PUBLISH", "airlock:test", "one"}).integer == 1; }));
  ASSERT_TRUE(eventually([&] { return count() >= 1; }));
  server.stop();
  server.start();
  ASSERT_TRUE(eventually([&] { return call(c, {"PUBLISH", "airlock:test", "two"}).integer == 1; }));
  ASSERT_TRUE(eventually([&] { return count() >= 2; }));
  std::lock_guard lock(m);
  EXPECT_EQ(got.back(), "airlock:test=two");
}

TEST(StateClient, SubscriptionConfirmedAgainAfterThePubSubConnectionDrops) {
  redis_server server;
  client c(options_for(server.port()));
  std::atomic<int> confirmed{0};
  c.subscribe(
      "airlock:test", [](std::string_view, std::string_view) {}, [&] { ++confirmed; });
  ASSERT_TRUE(eventually([&] { return confirmed.load() == 1; }));
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  // What Redis does to a subscriber past client-output-buffer-limit; the command connection
  // stays.
  EXPECT_GE(call(c, {"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
  EXPECT_TRUE(eventually([&] { return confirmed.load() == 2; }));
  EXPECT_EQ(c.mode_changes(), 0u);
}

TEST(StateClient, EveryTicksUntilItSaysStop) {
  client c(options_for(test::free_port()));
  std::atomic<int> ticks{0};
  c.every(10ms, [&] { return ++ticks < 3; });
  ASSERT_TRUE(eventually([&] { return ticks.load() == 3; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(ticks.load(), 3);
}

TEST(StateClient, PubSubMessagePastTheBoundDropsTheConnection) {
  // A message bigger than max_message_bytes is never buffered whole: the pub/sub connection is
  // dropped at the bound and made again; smaller messages still arrive.
  redis_server server;
  client c(options_for(server.port()));
  std::mutex m;
  std::vector<std::size_t> sizes;
  std::atomic<int> confirmed{0};
  c.subscribe(
      "airlock:test",
      [&](std::string_view, std::string_view text) {
        std::lock_guard lock(m);
        sizes.push_back(text.size());
      },
      [&] { ++confirmed; });
  ASSERT_TRUE(eventually([&] { return confirmed.load() == 1; }));
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(
      call(c, {"PUBLISH", "airlock:test", std::string(client_options{}.max_message_bytes, 'x')})
          .integer,
      1);
  ASSERT_TRUE(eventually([&] { return confirmed.load() == 2; }));
  ASSERT_TRUE(eventually([&] {
    return call(c, {"PUBLISH", "airlock:test", "small"}).integer == 1;
  }));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(m);
    return !sizes.empty();
  }));
  std::lock_guard lock(m);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{5}));
}

TEST(StateClient, ReplyPastTheBoundIsUnavailableAndTheClientRecovers) {
  redis_server server;
  client_options o = options_for(server.port());
  o.max_reply_bytes = 64 * 1024;
  client c(o);
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(call(c, {"SET", "big", std::string(100 * 1024, 'x')}).text, "OK");
  const reply r = call(c, {"GET", "big"});
  EXPECT_EQ(r.what, reply::kind::unavailable);
  EXPECT_NE(r.text.find("reply too large"), std::string::npos) << r.text;
  EXPECT_TRUE(eventually([&] { return call(c, {"PING"}).text == "PONG"; }));
}

TEST(StateClient, AuthWithAclUserAndRefusedPassword) {
  redis_server server(
      {"--user", "airlock", "on", ">s3cret", "~*", "&*", "+@all", "--user", "default", "off"});
  client_options good = options_for(server.port());
  good.username = "airlock";
  good.password = "s3cret";
  client c(good);
  ASSERT_TRUE(eventually([&] { return c.up(); }));
  EXPECT_EQ(call(c, {"PING"}).text, "PONG");

  std::atomic<int> downs{0};
  client_options bad = good;
  bad.password = "wrong";
  bad.on_mode_change = [&](bool up) {
    if (!up) ++downs;
  };
  client refused(bad);
  ASSERT_TRUE(eventually([&] { return downs.load() >= 1; }));
  EXPECT_FALSE(refused.up());
}

}  // namespace
}  // namespace airlock::state
