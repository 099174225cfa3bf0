#include "launcher/capture_protocol.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace airlock::launcher::capture {
namespace {

std::string rewrite(std::string_view in, std::string_view authority = "allowed.test:80") {
  http_rewriter r{std::string(authority)};
  std::string out;
  r.feed(in, out);
  r.finish(out);
  return out;
}

TEST(LauncherCaptureClassify, TellsTlsHttpAndTheRest) {
  EXPECT_EQ(classify(std::string("\x16\x03\x01\x02\x00", 5), false), kind::tls);
  EXPECT_EQ(classify("\x16", false), kind::tls);
  EXPECT_EQ(classify("GET / HTTP/1.1\r\n", false), kind::http);
  EXPECT_EQ(classify("\r\nPOST /x", false), kind::http);
  EXPECT_EQ(classify("OPTIONS * HTTP/1.1", false), kind::http);
  EXPECT_EQ(classify("M-SEARCH * HTTP/1.1", false), kind::http);
  EXPECT_EQ(classify("GET http://x/ HTTP/1.1", false), kind::http);
  // Not yet decidable, and decided at the end of the stream.
  EXPECT_EQ(classify("", false), kind::need_more);
  EXPECT_EQ(classify("GE", false), kind::need_more);
  EXPECT_EQ(classify("GET ", false), kind::need_more);
  EXPECT_EQ(classify("GE", true), kind::other);
  EXPECT_EQ(classify("", true), kind::other);
  // Other protocols and garbage.
  EXPECT_EQ(classify("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", false), kind::other);
  EXPECT_EQ(classify("get / HTTP/1.1", false), kind::other);
  EXPECT_EQ(classify("GET\t/", false), kind::other);
  EXPECT_EQ(classify("GET  /", false), kind::other);
  EXPECT_EQ(classify(std::string(40, 'A'), false), kind::other);
  EXPECT_EQ(classify(std::string("\x00\x01", 2), false), kind::other);
  EXPECT_EQ(classify("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false), kind::http);  // then refused
}

TEST(LauncherCaptureClassify, OnlyAFewEmptyLinesBeforeARequestLine) {
  std::string crlfs;
  for (std::size_t i = 0; i < max_empty_lines; ++i)
    crlfs += "\r\n";
  EXPECT_EQ(classify(crlfs + "GET / HTTP/1.1", false), kind::http);
  EXPECT_EQ(classify(crlfs, false), kind::need_more);
  // One more, or a stream of nothing else, is not HTTP: decided, not buffered for ever.
  EXPECT_EQ(classify(crlfs + "\r\nGET / HTTP/1.1", false), kind::other);
  std::string flood;
  for (int i = 0; i < 100000; ++i)
    flood += "\r\n";
  EXPECT_EQ(classify(flood, false), kind::other);
  // Whatever it is given, it never asks for more than max_sniff_bytes.
  std::mt19937 rng(7);
  const std::string alphabet = "\r\nGET /-A_";
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const std::size_t n = max_sniff_bytes + rng() % 16;
    for (std::size_t i = 0; i < n; ++i)
      s.push_back(alphabet[rng() % alphabet.size()]);
    EXPECT_NE(classify(s, false), kind::need_more) << s;
  }
}

TEST(LauncherCaptureClassify, AuthorityAndConnect) {
  EXPECT_EQ(authority("allowed.test", 443), "allowed.test:443");
  EXPECT_EQ(authority("2001:db8::1", 443), "[2001:db8::1]:443");
  EXPECT_EQ(connect_request("a.test:443"),
            "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n");
}

TEST(LauncherCaptureConnectReply, EstablishedRefusedAndIncomplete) {
  auto ok = parse_connect_reply("HTTP/1.1 200 Connection established\r\n\r\n\x16\x03");
  EXPECT_EQ(ok.result, connect_reply::state::established);
  EXPECT_EQ(ok.head_size, 39u);
  auto ok2 = parse_connect_reply("HTTP/1.0 204\r\nX: y\r\n\r\n");
  EXPECT_EQ(ok2.result, connect_reply::state::established);
  auto no = parse_connect_reply(
      "HTTP/1.1 403 Forbidden\r\nProxy-Status: airlock; error=http_request_denied\r\n\r\nno");
  EXPECT_EQ(no.result, connect_reply::state::refused);
  EXPECT_EQ(no.status_line, "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(parse_connect_reply("HTTP/1.1 200 OK\r\n").result, connect_reply::state::need_more);
  EXPECT_EQ(parse_connect_reply("").result, connect_reply::state::need_more);
  for (const char* bad : {"HTTP/1.1 2000 x\r\n\r\n", "HTTP/1.1 20 x\r\n\r\n", "HTTP/2 200\r\n\r\n",
                          "SSH-2.0\r\n\r\n", "HTTP/1.1 407 Auth\r\n\r\n"}) {
    EXPECT_EQ(parse_connect_reply(bad).result, connect_reply::state::refused) << bad;
  }
  EXPECT_EQ(parse_connect_reply(std::string(20000, 'x')).result, connect_reply::state::refused);
}

TEST(LauncherHttpRewriter, OriginFormBecomesAbsoluteForm) {
  EXPECT_EQ(rewrite("GET /x?y=1 HTTP/1.1\r\nHost: allowed.test\r\n\r\n"),
            "GET http://allowed.test:80/x?y=1 HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  EXPECT_EQ(rewrite("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"),
            "OPTIONS http://allowed.test:80 HTTP/1.1\r\nHost: a\r\n\r\n");
  // Already absolute: the client speaks to a proxy; the proxy's policy applies to that URL.
  EXPECT_EQ(rewrite("GET http://other.test/ HTTP/1.1\r\n\r\n"),
            "GET http://other.test/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(rewrite("GET / HTTP/1.0\r\n\r\n", "[2001:db8::1]:8080"),
            "GET http://[2001:db8::1]:8080/ HTTP/1.0\r\n\r\n");
  // Empty lines before a request are dropped (RFC 9112 section 2.2).
  EXPECT_EQ(rewrite("\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
            "GET http://allowed.test:80/ HTTP/1.1\r\n\r\n");
}

// Three requests on one connection: a body that looks like a request, a chunked body with
// an extension and trailers, then a plain GET. Only the three heads change.
const std::string keep_alive =
    "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 22\r\n\r\nGET /evil HTTP/1.1\r\n\r\n"
    "PUT /b HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
    "5;ext=1\r\nGET /\r\n10\r\n\r\n\r\nGET /x HTTP/\r\n0\r\nTrailer: t\r\n\r\n"
    "GET /c HTTP/1.1\r\n\r\n";
const std::string keep_alive_rewritten =
    "POST http://allowed.test:80/a HTTP/1.1\r\nHost: h\r\nContent-Length: 22\r\n\r\n"
    "GET /evil HTTP/1.1\r\n\r\n"
    "PUT http://allowed.test:80/b HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
    "5;ext=1\r\nGET /\r\n10\r\n\r\n\r\nGET /x HTTP/\r\n0\r\nTrailer: t\r\n\r\n"
    "GET http://allowed.test:80/c HTTP/1.1\r\n\r\n";

TEST(LauncherHttpRewriter, FramesBodiesOnAKeepAliveConnection) {
  http_rewriter r{"allowed.test:80"};
  std::string out;
  r.feed(keep_alive, out);
  EXPECT_EQ(out, keep_alive_rewritten);
  EXPECT_EQ(r.requests(), 3u);
  EXPECT_FALSE(r.passthrough());
}

TEST(LauncherHttpRewriter, AnySplitOfTheStreamGivesTheSameBytes) {
  // Byte by byte, and at random cut points: the same output as in one piece.
  {
    http_rewriter r{"allowed.test:80"};
    std::string out;
    for (char c : keep_alive)
      r.feed(std::string_view(&c, 1), out);
    EXPECT_EQ(out, keep_alive_rewritten);
  }
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    http_rewriter r{"allowed.test:80"};
    std::string out;
    std::size_t pos = 0;
    while (pos < keep_alive.size()) {
      const std::size_t n = 1 + rng() % 17;
      r.feed(std::string_view(keep_alive).substr(pos, n), out);
      pos += n;
    }
    ASSERT_EQ(out, keep_alive_rewritten) << round;
  }
}

TEST(LauncherHttpRewriter, WhatItCannotFrameGoesOnUnchanged) {
  // Each of these leaves the rest of the stream verbatim; the proxy answers the error.
  for (const std::string& head : {
           std::string("GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy"),
           std::string("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nno colon\r\n\r\n"),
           std::string("GET / HTTP/2.0\r\n\r\n"),
           std::string("GET /\x01 HTTP/1.1\r\n\r\n"),
           std::string("GET / HTTP/1.1 extra\r\n\r\n"),
           std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
       }) {
    http_rewriter r{"allowed.test:80"};
    std::string out;
    r.feed(head, out);
    EXPECT_TRUE(r.passthrough()) << head;
    EXPECT_EQ(out, head);
  }
  // A CONNECT is a proxy request already; what follows is the tunnel's.
  EXPECT_EQ(rewrite("CONNECT a:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
            "CONNECT a:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  // A bad chunk size ends the rewriting mid-body.
  EXPECT_EQ(
      rewrite("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET / HTTP/1.1\r\n\r\n"),
      "POST http://allowed.test:80/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "zz\r\nGET / HTTP/1.1\r\n\r\n");
}

TEST(LauncherHttpRewriter, UpgradeHandsTheConnectionOver) {
  const std::string in =
      "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nGET / HTTP/1.1\r\n\r\n";
  http_rewriter r{"a:80"};
  std::string out;
  r.feed(in, out);
  EXPECT_EQ(out,
            "GET http://a:80/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
            "GET / HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.passthrough());
}

TEST(LauncherHttpRewriter, OversizedAndUnfinishedHeads) {
  http_rewriter r{"a:80", 100};
  std::string out;
  const std::string big =
      "GET /" + std::string(200, 'x') + " HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n";
  r.feed(big, out);
  EXPECT_TRUE(r.passthrough());
  EXPECT_EQ(out, big);
  // The client stops mid-head: the partial head goes on as it is at the end.
  http_rewriter partial{"a:80"};
  std::string out2;
  partial.feed("GET / HTTP/1.1\r\nHost: a\r\n", out2);
  EXPECT_EQ(out2, "");
  partial.finish(out2);
  EXPECT_EQ(out2, "GET / HTTP/1.1\r\nHost: a\r\n");
  // A huge chunk size is refused before it can overflow.
  EXPECT_EQ(rewrite("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n"),
            "POST http://allowed.test:80/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            "1000000000000000\r\n");
}

TEST(LauncherHttpRewriter, RandomInputNeverBreaksIt) {
  std::mt19937 rng(5);
  const std::string alphabet = "GET /HTP1.\r\n:Content-Length0123456789chunkedTransfer-Encoding ";
  for (int round = 0; round < 3000; ++round) {
    std::string in;
    const std::size_t n = rng() % 300;
    for (std::size_t i = 0; i < n; ++i)
      in.push_back(i % 7 == 0 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()]);
    http_rewriter r{"a:1", 256};
    std::string out;
    std::size_t pos = 0;
    while (pos < in.size()) {
      const std::size_t k = 1 + rng() % 40;
      r.feed(std::string_view(in).substr(pos, k), out);
      pos += k;
    }
    r.finish(out);
    // The rewrite adds "http://a:1" per request and drops only empty lines between requests.
    EXPECT_LE(out.size(), in.size() + 10 * r.requests());
  }
}

}  // namespace
}  // namespace airlock::launcher::capture
