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

TEST(RequestLineScanner, ResumedScanMatchesWholeScan) {
  const std::string lines[] = {"GET /path HTTP/1.1\r\nHost: a\r\n", "GET / HTTP/2.0\r\n",
                               "GET /" + std::string(100, 'a') + " HTTP/1.0\r\n", "\x16\x03"};
  for (const auto& line : lines) {
    for (std::size_t step : {1, 3, 8}) {
      for (std::size_t max_line : {64, 4096}) {
        request_line_scanner scanner(max_line);
        for (std::size_t n = 0;; n = std::min(line.size(), n + step)) {
          const std::string_view prefix(line.data(), n);
          ASSERT_EQ(scanner.scan(prefix), classify_request_line(prefix, max_line))
              << line << " prefix " << n << " step " << step;
          if (n == line.size()) break;
        }
      }
    }
  }
}

TEST(RequestLineScanner, KeepsItsVerdict) {
  request_line_scanner scanner;
  EXPECT_EQ(scanner.scan("GET / HT"), need_more);
  EXPECT_EQ(scanner.scan("GET / HTTP/1.1\r\n"), http1);
  EXPECT_EQ(scanner.scan("GET / HTTP/1.1\r\nanything"), http1);
}

}  // namespace
}  // namespace airlock::net
