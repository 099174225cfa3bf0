#include "proxy/hop_by_hop.hpp"

#include <gtest/gtest.h>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>
#include <vector>

namespace airlock::proxy {
namespace {

namespace http = boost::beast::http;

// Fields as a request parser builds them from raw header lines (order and duplicates kept).
http::request<http::string_body> parse(const std::string& header_lines) {
  std::string raw = "GET http://h.test/ HTTP/1.1\r\n" + header_lines + "\r\n";
  http::request_parser<http::string_body> p;
  p.eager(true);
  boost::system::error_code ec;
  p.put(boost::asio::buffer(raw), ec);
  EXPECT_FALSE(ec) << ec.message() << "\n" << raw;
  return p.release();
}

// "name: value" for every field left, in order, names as sent.
std::vector<std::string> lines(const http::fields& f) {
  std::vector<std::string> out;
  for (const auto& h : f)
    out.push_back(std::string(h.name_string()) + ": " + std::string(h.value()));
  return out;
}

using v = std::vector<std::string>;

TEST(HopByHop, RemovesTheFixedSet) {
  auto req = parse(
      "Host: h.test\r\n"
      "Connection: keep-alive\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Proxy-Authorization: Basic c2VjcmV0OnNlY3JldA==\r\n"
      "Proxy-Authenticate: Basic\r\n"
      "TE: trailers\r\n"
      "Trailer: X-Checksum\r\n"
      "Upgrade: websocket\r\n"
      "Accept: */*\r\n"
      "Content-Length: 0\r\n");
  EXPECT_EQ(strip_hop_by_hop(req), "");
  EXPECT_EQ(lines(req), (v{"Host: h.test", "Accept: */*", "Content-Length: 0"}));
}

TEST(HopByHop, ConnectionNamingTheFixedSetBesideOthers) {
  // Tokens naming fields of the fixed set (any case) are left to the walk over the fields; the
  // others are erased by name, every instance, and an Upgrade named there is still reported.
  auto req = parse(
      "Host: h.test\r\n"
      "Connection: Keep-Alive, TE, X-A, UPGRADE\r\n"
      "keep-alive: timeout=5\r\n"
      "X-A: 1\r\n"
      "te: trailers\r\n"
      "x-a: 2\r\n"
      "Upgrade: WebSocket\r\n"
      "X-B: 3\r\n");
  EXPECT_EQ(strip_hop_by_hop(req), "websocket");
  EXPECT_EQ(lines(req), (v{"Host: h.test", "X-B: 3"}));
}

TEST(HopByHop, RemovesHeadersNamedByConnection) {
  auto req = parse(
      "Host: h.test\r\n"
      "Connection: X-Secret, x-other\r\n"
      "X-Secret: 1\r\n"
      "X-Other: 2\r\n"
      "X-Kept: 3\r\n");
  strip_hop_by_hop(req);
  EXPECT_EQ(lines(req), (v{"Host: h.test", "X-Kept: 3"}));
}

TEST(HopByHop, EveryConnectionHeaderCounts) {
  // Separated by other fields on the wire: a second Connection line must not be overlooked.
  auto req = parse(
      "Connection: X-A\r\n"
      "Host: h.test\r\n"
      "X-A: 1\r\n"
      "connection: X-B\r\n"
      "X-B: 2\r\n"
      "X-C: 3\r\n"
      "CONNECTION: x-c\r\n");
  strip_hop_by_hop(req);
  EXPECT_EQ(lines(req), (v{"Host: h.test"}));
}

TEST(HopByHop, OddSpacingCaseAndEmptyElements) {
  auto req = parse(
      "Host: h.test\r\n"
      "Connection: ,, \t X-One\t ,,X-TWO  ,\t,\r\n"
      "x-one: 1\r\n"
      "X-Two: 2\r\n"
      "X-Twos: kept\r\n"
      "X-On: kept\r\n");
  strip_hop_by_hop(req);
  EXPECT_EQ(lines(req), (v{"Host: h.test", "X-Twos: kept", "X-On: kept"}));
}

TEST(HopByHop, RemovesEveryInstanceOfANamedHeader) {
  auto req = parse(
      "Connection: X-Dup\r\n"
      "X-Dup: 1\r\n"
      "Host: h.test\r\n"
      "X-Dup: 2\r\n");
  strip_hop_by_hop(req);
  EXPECT_EQ(lines(req), (v{"Host: h.test"}));
}

TEST(HopByHop, NeverRemovesFramingOrHost) {
  // RFC 9110 section 7.6.1 lets Connection name any field, but dropping Content-Length or
  // Transfer-Encoding here would desynchronise the body framing (request smuggling).
  auto req = parse(
      "Host: h.test\r\n"
      "Connection: Content-Length, transfer-encoding, HOST, close\r\n"
      "Content-Length: 5\r\n");
  strip_hop_by_hop(req);
  EXPECT_EQ(lines(req), (v{"Host: h.test", "Content-Length: 5"}));

  auto chunked = parse(
      "Host: h.test\r\n"
      "Connection: TRANSFER-ENCODING \r\n"
      "Transfer-Encoding: chunked\r\n");
  strip_hop_by_hop(chunked);
  EXPECT_EQ(lines(chunked), (v{"Host: h.test", "Transfer-Encoding: chunked"}));
}

TEST(HopByHop, UpgradeReturnedOnlyWhenConnectionAsksForIt) {
  auto ws = parse(
      "Host: h.test\r\n"
      "Connection: keep-alive, Upgrade\r\n"
      "Upgrade:  WebSocket \r\n"
      "Sec-WebSocket-Key: k\r\n");
  EXPECT_EQ(strip_hop_by_hop(ws), "websocket");
  EXPECT_EQ(ws.count(http::field::upgrade), 0u) << "removed; the caller decides to re-add it";
  EXPECT_EQ(ws.count(http::field::connection), 0u);
  EXPECT_EQ(ws["Sec-WebSocket-Key"], "k");

  auto second_line = parse(
      "Connection: keep-alive\r\n"
      "Host: h.test\r\n"
      "Connection: UPGRADE\r\n"
      "Upgrade: h2c\r\n");
  EXPECT_EQ(strip_hop_by_hop(second_line), "h2c");

  auto no_connection = parse("Host: h.test\r\nUpgrade: websocket\r\n");
  EXPECT_EQ(strip_hop_by_hop(no_connection), "");
  EXPECT_EQ(no_connection.count(http::field::upgrade), 0u);

  auto no_upgrade_header = parse("Host: h.test\r\nConnection: upgrade\r\n");
  EXPECT_EQ(strip_hop_by_hop(no_upgrade_header), "");

  auto lookalike = parse("Host: h.test\r\nConnection: upgrades, x-upgrade\r\nUpgrade: ws\r\n");
  EXPECT_EQ(strip_hop_by_hop(lookalike), "");
}

TEST(HopByHop, NothingToDo) {
  auto req = parse("Host: h.test\r\nAccept: */*\r\n");
  EXPECT_EQ(strip_hop_by_hop(req), "");
  EXPECT_EQ(lines(req), (v{"Host: h.test", "Accept: */*"}));

  http::fields empty;
  EXPECT_EQ(strip_hop_by_hop(empty), "");
  EXPECT_EQ(empty.begin(), empty.end());
}

TEST(HopByHop, ResponseFieldsToo) {
  http::fields res;
  res.insert(http::field::content_type, "text/plain");
  res.insert(http::field::connection, "close, X-Backend");
  res.insert("X-Backend", "node-7");
  res.insert(http::field::proxy_authenticate, "Basic realm=\"upstream\"");
  res.insert(http::field::transfer_encoding, "chunked");
  res.insert(http::field::trailer, "X-Sum");
  strip_hop_by_hop(res);
  EXPECT_EQ(lines(res), (v{"Content-Type: text/plain", "Transfer-Encoding: chunked"}));
}

}  // namespace
}  // namespace airlock::proxy
