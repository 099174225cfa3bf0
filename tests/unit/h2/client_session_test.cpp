// The HTTP/2 client codec (h2/client_session.hpp) against the proxy's own server codec, in
// memory: requests and answers with bodies and trailers both ways, the origin's
// SETTINGS_MAX_CONCURRENT_STREAMS, flow control given back as bytes are consumed, GOAWAY,
// RST_STREAM, and an oversized response head.
#include "h2/client_session.hpp"
#include "h2/server_session.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

namespace airlock::h2 {
namespace {

struct origin_observer : observer {
  std::vector<std::shared_ptr<stream>> requests;
  void on_request(const std::shared_ptr<stream>& st) override { requests.push_back(st); }
  void on_activity(stream&) override {}
};

struct proxy_observer : client_observer {
  int activity = 0;
  int connection = 0;
  void on_activity(client_stream&) override { ++activity; }
  void on_connection() override { ++connection; }
};

// Moves bytes both ways until neither side has more to say.
bool shuttle(client_session& c, server_session& s) {
  for (int i = 0; i < 100; ++i) {
    std::string up;
    if (!c.fill_output(up, 1 << 20)) return false;
    if (!up.empty() && !s.recv(up)) return false;
    std::string down;
    if (!s.fill_output(down, 1 << 20)) return false;
    if (!down.empty() && !c.recv(down)) return false;
    if (up.empty() && down.empty()) return true;
  }
  return true;
}

header_list get(const std::string& path, const char* method = "GET") {
  return {{":method", method}, {":scheme", "https"}, {":authority", "o.test"}, {":path", path}};
}

void answer(server_session& s, stream& st, unsigned status, std::string body,
            header_list trailers = {}) {
  ASSERT_TRUE(s.submit_response(st, status, {{"content-type", "text/plain"}}, true));
  st.out = std::move(body);
  st.out_end = true;
  st.out_trailers = std::move(trailers);
  s.resume(st);
}

TEST(H2ClientSession, RequestAnswerBodiesAndTrailersBothWays) {
  origin_observer oo;
  proxy_observer po;
  server_session origin({}, oo);
  client_session c({}, po);
  auto st = c.submit_request(get("/grpc.Echo/Say", "POST"), true);
  ASSERT_TRUE(st);
  st->out = "request body";
  st->out_end = true;
  st->out_trailers = {{"x-request-trailer", "1"}};
  c.resume(*st);
  ASSERT_TRUE(shuttle(c, origin));
  ASSERT_EQ(oo.requests.size(), 1u);
  auto& req = *oo.requests[0];
  EXPECT_EQ(req.body, "request body");
  EXPECT_TRUE(req.body_done);
  ASSERT_EQ(req.trailers.size(), 1u);
  EXPECT_EQ(req.trailers[0].first, "x-request-trailer");
  answer(origin, req, 200, "answer", {{"grpc-status", "0"}, {"grpc-message", "ok"}});
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_TRUE(st->head_done);
  EXPECT_EQ(st->status(), 200u);
  EXPECT_EQ(st->body, "answer");
  EXPECT_TRUE(st->body_done);
  ASSERT_EQ(st->trailers.size(), 2u);
  EXPECT_EQ(st->trailers[0], (std::pair<std::string, std::string>{"grpc-status", "0"}));
  EXPECT_TRUE(st->closed);
  EXPECT_EQ(st->close_error, 0u);
  EXPECT_EQ(c.open_streams(), 0u);
  EXPECT_GT(po.activity, 0);
}

TEST(H2ClientSession, RespectsTheOriginsConcurrentStreams) {
  origin_observer oo;
  proxy_observer po;
  limits ol;
  ol.max_concurrent_streams = 2;
  server_session origin(ol, oo);
  client_session c({}, po);
  ASSERT_TRUE(shuttle(c, origin));  // the origin's SETTINGS arrive
  auto a = c.submit_request(get("/a"), false);
  auto b = c.submit_request(get("/b"), false);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(c.can_open());
  EXPECT_EQ(c.submit_request(get("/c"), false), nullptr);
  EXPECT_TRUE(c.usable());
  ASSERT_TRUE(shuttle(c, origin));
  ASSERT_EQ(oo.requests.size(), 2u);
  answer(origin, *oo.requests[0], 200, "a");
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_TRUE(a->closed);
  EXPECT_TRUE(c.can_open());  // a slot is free again
  EXPECT_GT(po.connection, 0);
}

TEST(H2ClientSession, ResponseWindowOpensOnlyAsBytesAreConsumed) {
  origin_observer oo;
  proxy_observer po;
  server_session origin({}, oo);
  client_limits cl;
  cl.initial_window = 1000;
  client_session c(cl, po);
  auto st = c.submit_request(get("/big"), false);
  ASSERT_TRUE(shuttle(c, origin));
  ASSERT_EQ(oo.requests.size(), 1u);
  answer(origin, *oo.requests[0], 200, std::string(5000, 'x'));
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_EQ(st->body.size(), 1000u);  // the stream's window, no more
  EXPECT_FALSE(st->body_done);
  for (int i = 0; i < 10 && !st->body_done; ++i) {
    const auto n = st->body.size();
    st->body.clear();
    c.consume(*st, n);
    ASSERT_TRUE(shuttle(c, origin));
  }
  EXPECT_TRUE(st->body_done);
}

TEST(H2ClientSession, GoawayEndsNewStreamsAndResetEndsOne) {
  origin_observer oo;
  proxy_observer po;
  server_session origin({}, oo);
  client_session c({}, po);
  auto a = c.submit_request(get("/a"), false);
  auto b = c.submit_request(get("/b"), false);
  ASSERT_TRUE(shuttle(c, origin));
  ASSERT_EQ(oo.requests.size(), 2u);
  origin.reset(*oo.requests[0], NGHTTP2_REFUSED_STREAM);
  origin.shutdown(0);
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_TRUE(a->closed);
  EXPECT_EQ(a->close_error, static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_FALSE(b->closed);  // processed before the GOAWAY: it may still be answered
  EXPECT_TRUE(c.goaway_received());
  EXPECT_FALSE(c.usable());
  EXPECT_EQ(c.submit_request(get("/c"), false), nullptr);
  answer(origin, *oo.requests[1], 200, "b");
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_EQ(b->body, "b");
  EXPECT_TRUE(b->closed);
}

TEST(H2ClientSession, OversizedHeadResetsThatStreamOnly) {
  origin_observer oo;
  proxy_observer po;
  server_session origin({}, oo);
  client_limits cl;
  cl.max_header_list_bytes = 300;
  client_session c(cl, po);
  auto small = c.submit_request(get("/small"), false);
  auto big = c.submit_request(get("/big"), false);
  ASSERT_TRUE(shuttle(c, origin));
  ASSERT_EQ(oo.requests.size(), 2u);
  answer(origin, *oo.requests[0], 200, "fine");
  ASSERT_TRUE(
      origin.submit_response(*oo.requests[1], 200, {{"x-big", std::string(400, 'v')}}, false));
  ASSERT_TRUE(shuttle(c, origin));
  EXPECT_EQ(small->body, "fine");
  EXPECT_TRUE(big->oversized);
  EXPECT_TRUE(big->closed);
  EXPECT_FALSE(big->head_done);
  EXPECT_TRUE(c.usable());  // the connection carries on
}

TEST(H2ClientSession, AbandonClosesEveryStream) {
  proxy_observer po;
  client_session c({}, po);
  auto a = c.submit_request(get("/a"), false);
  ASSERT_TRUE(a);
  c.abandon(NGHTTP2_CANCEL);
  EXPECT_TRUE(a->closed);
  EXPECT_FALSE(c.usable());
  std::string out;
  EXPECT_FALSE(c.fill_output(out, 1000));
}

}  // namespace
}  // namespace airlock::h2
