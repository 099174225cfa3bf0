// The HTTP/2 codec (h2/server_session.hpp) against nghttp2's own client session, in memory:
// heads, bodies and flow control, answers and trailers, and the defences that need no clock.
#include "h2/server_session.hpp"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace airlock::h2 {
namespace {

// Records what the session reports.
struct recording_observer : observer {
  std::vector<std::shared_ptr<stream>> requests;
  int activity = 0;
  void on_request(const std::shared_ptr<stream>& st) override { requests.push_back(st); }
  void on_activity(stream&) override { ++activity; }
};

// A client: nghttp2's client session; what it received, per stream.
struct client {
  nghttp2_session* session = nullptr;
  std::map<std::int32_t, std::map<std::string, std::string>> headers;
  std::map<std::int32_t, std::string> bodies;
  std::map<std::int32_t, std::uint32_t> closed;
  std::uint32_t goaway = UINT32_MAX;

  client() {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* n, std::size_t nl,
                const std::uint8_t* v, std::size_t vl, std::uint8_t, void* u) {
          static_cast<client*>(u)->headers[f->hd.stream_id][std::string((const char*)n, nl)] =
              std::string((const char*)v, vl);
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cbs, [](nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* d,
                std::size_t len, void* u) {
          static_cast<client*>(u)->bodies[id].append((const char*)d, len);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(
        cbs, [](nghttp2_session*, std::int32_t id, std::uint32_t code, void* u) {
          static_cast<client*>(u)->closed[id] = code;
          return 0;
        });
    nghttp2_session_callbacks_set_on_frame_recv_callback(
        cbs, [](nghttp2_session*, const nghttp2_frame* f, void* u) {
          if (f->hd.type == NGHTTP2_GOAWAY) static_cast<client*>(u)->goaway = f->goaway.error_code;
          return 0;
        });
    nghttp2_session_client_new(&session, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~client() { nghttp2_session_del(session); }

  std::int32_t get(const std::string& path, nghttp2_data_provider* body = nullptr) {
    std::vector<std::pair<std::string, std::string>> h = {{":method", body ? "POST" : "GET"},
                                                          {":scheme", "https"},
                                                          {":authority", "a.test"},
                                                          {":path", path}};
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : h)
      nv.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)v.data(), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    return nghttp2_submit_request(session, nullptr, nv.data(), nv.size(), body, nullptr);
  }
  std::string output() {
    std::string out;
    const std::uint8_t* d = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session, &d)) > 0;)
      out.append((const char*)d, n);
    return out;
  }
  void input(const std::string& bytes) {
    ASSERT_GE(nghttp2_session_mem_recv(session, (const std::uint8_t*)bytes.data(), bytes.size()),
              0);
  }
};

// Moves bytes both ways until neither side has more to say.
bool exchange(client& c, server_session& s) {
  for (int i = 0; i < 50; ++i) {
    auto up = c.output();
    if (!up.empty() && !s.recv(up)) return false;
    std::string down;
    if (!s.fill_output(down, 1 << 20)) return false;
    if (!down.empty()) c.input(down);
    if (up.empty() && down.empty()) return true;
  }
  return true;
}

TEST(H2ServerSession, RequestHeadAndAnswer) {
  recording_observer o;
  server_session s({}, o);
  client c;
  const auto id = c.get("/a?b=c");
  ASSERT_TRUE(exchange(c, s));
  ASSERT_EQ(o.requests.size(), 1u);
  auto& st = *o.requests[0];
  EXPECT_TRUE(st.head_done);
  EXPECT_TRUE(st.body_done);
  EXPECT_EQ(st.headers[3].first, ":path");
  EXPECT_EQ(st.headers[3].second, "/a?b=c");
  ASSERT_TRUE(s.submit_response(st, 200, {{"x-a", "1"}}, true));
  st.out = "hello";
  st.out_end = true;
  st.out_trailers = {{"grpc-status", "0"}};
  s.resume(st);
  ASSERT_TRUE(exchange(c, s));
  EXPECT_EQ(c.headers[id][":status"], "200");
  EXPECT_EQ(c.headers[id]["x-a"], "1");
  EXPECT_EQ(c.headers[id]["grpc-status"], "0");  // the trailers
  EXPECT_EQ(c.bodies[id], "hello");
  EXPECT_EQ(c.closed[id], 0u);
  EXPECT_TRUE(st.closed);
}

TEST(H2ServerSession, BodyWindowOpensOnlyAsBytesAreConsumed) {
  recording_observer o;
  limits l;
  l.initial_window = 1000;
  server_session s(l, o);
  client c;
  static std::string body(200000, 'x');
  static std::size_t sent = 0;
  sent = 0;
  nghttp2_data_provider p{};
  p.read_callback = [](nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t len,
                       std::uint32_t* flags, nghttp2_data_source*, void*) -> ssize_t {
    const auto n = std::min(len, body.size() - sent);
    std::memcpy(buf, body.data() + sent, n);
    sent += n;
    if (sent == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  };
  c.get("/up", &p);
  ASSERT_TRUE(exchange(c, s));
  ASSERT_EQ(o.requests.size(), 1u);
  auto& st = *o.requests[0];
  // Until it has the SETTINGS, the client may send RFC 9113's default window of 65535; then
  // nothing more comes until bytes are consumed.
  ASSERT_TRUE(exchange(c, s));
  EXPECT_LE(st.body.size(), 65535u);
  EXPECT_FALSE(st.body_done);
  std::string got;
  for (int i = 0; i < 2000 && !st.body_done; ++i) {
    got += st.body;
    s.consume(st, st.body.size());
    st.body.clear();
    ASSERT_TRUE(exchange(c, s));
  }
  got += st.body;
  EXPECT_TRUE(st.body_done);
  EXPECT_EQ(got, body);
}

TEST(H2ServerSession, OversizedHeaderListIsMarkedNotStored) {
  recording_observer o;
  limits l;
  l.max_header_list_bytes = 300;
  server_session s(l, o);
  client c;
  std::string big(400, 'v');
  std::vector<nghttp2_nv> nv;
  std::vector<std::pair<std::string, std::string>> h = {
      {":method", "GET"}, {":scheme", "https"}, {":authority", "a"}, {":path", "/"}, {"x", big}};
  for (auto& [n, v] : h)
    nv.push_back({(std::uint8_t*)n.data(), (std::uint8_t*)v.data(), n.size(), v.size(),
                  NGHTTP2_NV_FLAG_NONE});
  nghttp2_submit_request(c.session, nullptr, nv.data(), nv.size(), nullptr, nullptr);
  ASSERT_TRUE(exchange(c, s));
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_TRUE(o.requests[0]->oversized_head);
  EXPECT_EQ(o.requests[0]->headers.size(), 4u);
}

TEST(H2ServerSession, RapidResetEndsTheConnectionWithEnhanceYourCalm) {
  recording_observer o;
  limits l;
  l.reset_burst = 10;
  l.resets_per_second = 1;
  server_session s(l, o);
  client c;
  bool ended = false;
  for (int i = 0; i < 40 && !ended; ++i) {
    const auto id = c.get("/r");
    ASSERT_TRUE(exchange(c, s));  // the HEADERS go out, then the reset
    nghttp2_submit_rst_stream(c.session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    ended = !exchange(c, s);
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(s.goaway_sent(), static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  std::string down;
  s.fill_output(down, 1 << 20);
  c.input(down);
  EXPECT_EQ(c.goaway, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST(H2ServerSession, GarbageIsAProtocolError) {
  recording_observer o;
  server_session s({}, o);
  EXPECT_FALSE(s.recv(std::string("GET / HTTP/1.1\r\nHost: a\r\n\r\n")));
  EXPECT_FALSE(s.error().empty());
}

TEST(H2ServerSession, ResetStreamLeavesOthers) {
  recording_observer o;
  server_session s({}, o);
  client c;
  const auto a = c.get("/a");
  const auto b = c.get("/b");
  ASSERT_TRUE(exchange(c, s));
  ASSERT_EQ(o.requests.size(), 2u);
  s.reset(*o.requests[0], NGHTTP2_REFUSED_STREAM);
  ASSERT_TRUE(s.submit_response(*o.requests[1], 204, {}, false));
  ASSERT_TRUE(exchange(c, s));
  EXPECT_EQ(c.closed[a], static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(c.headers[b][":status"], "204");
  EXPECT_EQ(s.open_streams(), 0u);
}

}  // namespace
}  // namespace airlock::h2
