#include "net/http_framing.hpp"

#include <gtest/gtest.h>

#include <string>

namespace airlock::net {
namespace {

using enum request_line_status;

TEST(ClassifyRequestLine, WholeLinesOfHttp10And11) {
  EXPECT_EQ(classify_request_line("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), http1);
  EXPECT_EQ(classify_request_line("POST /x?y=1 HTTP/1.0\r\n"), http1);
  EXPECT_EQ(classify_request_line("OPTIONS * HTTP/1.1\r\n"), http1);
}

TEST(ClassifyRequestLine, EveryPrefixNeedsMore) {
  const std::string line = "GET /path HTTP/1.1\r\n";
  for (std::size_t n = 0; n < line.size(); ++n)
    EXPECT_EQ(classify_request_line(line.substr(0, n)), need_more) << n;
}

TEST(ClassifyRequestLine, OtherBytesAreOther) {
  EXPECT_EQ(classify_request_line("\x16\x03\x01"), other);        // TLS
  EXPECT_EQ(classify_request_line("hello there\r\n"), other);     // no version
  EXPECT_EQ(classify_request_line("GET / HTTP/2.0\r\n"), other);  // not HTTP/1.x
  EXPECT_EQ(classify_request_line("GET / HTTP/1.1\n"), other);    // bare LF
  EXPECT_EQ(classify_request_line(" GET / HTTP/1.1\r\n"), other);
  EXPECT_EQ(classify_request_line("GET  / HTTP/1.1\r\n"), other);
  EXPECT_EQ(classify_request_line("G(T / HTTP/1.1\r\n"), other);
  EXPECT_EQ(classify_request_line(std::string("GET /\0 HTTP/1.1\r\n", 18)), other);
}

TEST(ClassifyRequestLine, OverlongLineIsOther) {
  const std::string line = "GET /" + std::string(100, 'a');
  EXPECT_EQ(classify_request_line(line, 64), other);
  EXPECT_EQ(classify_request_line(line, 4096), need_more);
}

}  // namespace
}  // namespace airlock::net
