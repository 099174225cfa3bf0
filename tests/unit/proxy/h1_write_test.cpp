#include "proxy/h1_write.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <sstream>
#include <string>
#include <vector>

namespace airlock::proxy {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// A response written piece by piece as the body relays do: the head with the first piece, then
// each further piece; `pieces` empty means no body at all.
template <class Stream>
asio::awaitable<void> write_pieces(Stream& out, bool chunked, std::vector<std::string> pieces,
                                   std::vector<boost::system::error_code>& results) {
  http::response<http::buffer_body> res{http::status::ok, 11};
  res.set(http::field::server, "t");
  if (chunked)
    res.chunked(true);
  else {
    std::size_t total = 0;
    for (const auto& p : pieces)
      total += p.size();
    res.content_length(total);
  }
  http::response_serializer<http::buffer_body> sr{res};
  auto& b = res.body();
  for (std::size_t i = 0; i < pieces.size() || i == 0; ++i) {
    const bool have = i < pieces.size() && !pieces[i].empty();
    b.data = have ? pieces[i].data() : nullptr;
    b.size = have ? pieces[i].size() : 0;
    b.more = i + 1 < pieces.size();
    auto [ec, n] = co_await h1::async_write(out, sr);
    results.push_back(ec);
  }
}

const std::string head_cl = "HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: ";
const std::string head_chunked =
    "HTTP/1.1 200 OK\r\nServer: t\r\nTransfer-Encoding: chunked\r\n\r\n";

// Over Beast's in-memory stream (no socket: every byte goes through the stream's own write).
std::string written_to_test_stream(bool chunked, std::vector<std::string> pieces,
                                   std::vector<boost::system::error_code>& results) {
  asio::io_context io;
  beast::test::stream a(io), b(io);
  a.connect(b);
  asio::co_spawn(io, write_pieces(a, chunked, std::move(pieces), results), asio::detached);
  io.run();
  return std::string(b.str());
}

// Over a loopback TCP connection (the bytes go out at once, without waiting, where they fit;
// the rest through the stream while the peer reads).
std::string written_to_socket(bool chunked, std::vector<std::string> pieces,
                              std::vector<boost::system::error_code>& results,
                              std::size_t expect_bytes) {
  asio::io_context io;
  auto [a, peer] = test::loopback_pair(io);
  beast::tcp_stream out(std::move(a));
  bool written = false, read = false;
  asio::co_spawn(io, write_pieces(out, chunked, std::move(pieces), results),
                 [&](std::exception_ptr) { written = true; });
  std::string got(expect_bytes, '\0');
  asio::async_read(peer, asio::buffer(got), [&](boost::system::error_code, std::size_t n) {
    got.resize(n);
    read = true;
  });
  EXPECT_TRUE(test::run_until(
      io, [&] { return written && read; }, 5000ms));
  return got;
}

TEST(H1Write, ContentLengthHeadAndBodyInOne) {
  std::vector<boost::system::error_code> results;
  const auto got = written_to_test_stream(false, {"hello"}, results);
  EXPECT_EQ(got, head_cl + "5\r\n\r\nhello");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0]);
}

TEST(H1Write, ChunkedPiecesThenTheLastChunk) {
  std::vector<boost::system::error_code> results;
  const std::string big(5000, 'x');  // large enough to be passed by reference, not copied
  const auto got = written_to_test_stream(true, {"ab", big, "c"}, results);
  EXPECT_EQ(got, head_chunked + "2\r\nab\r\n1388\r\n" + big + "\r\n1\r\nc\r\n0\r\n\r\n");
  ASSERT_EQ(results.size(), 3u);
  // A piece out with more to come is need_buffer, as with http::async_write.
  EXPECT_EQ(results[0], http::error::need_buffer);
  EXPECT_EQ(results[1], http::error::need_buffer);
  EXPECT_FALSE(results[2]);
}

TEST(H1Write, NoBody) {
  std::vector<boost::system::error_code> results;
  const auto got = written_to_test_stream(false, {}, results);
  EXPECT_EQ(got, head_cl + "0\r\n\r\n");
}

TEST(H1Write, OverASocketTheSameBytes) {
  std::vector<boost::system::error_code> results;
  const std::string big(100000, 'y');  // more than one piece of the gathered buffers
  const std::string expected = head_chunked + "3\r\nabc\r\n186a0\r\n" + big + "\r\n0\r\n\r\n";
  const auto got = written_to_socket(true, {"abc", big}, results, expected.size());
  EXPECT_EQ(got, expected);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], http::error::need_buffer);
  EXPECT_FALSE(results[1]);
}

// The head written by hand is byte for byte the one Beast's serializer writes.
template <bool IsRequest>
void expect_head_as_beast(const http::header<IsRequest>& h) {
  std::ostringstream beast_text;
  beast_text << h;
  std::string ours;
  h1::append_head(ours, h);
  EXPECT_EQ(ours, beast_text.str());
}

TEST(H1Write, HeadsAsBeastWritesThem) {
  http::request_header<> req;
  req.method(http::verb::get);
  req.target("/a?b=c");
  req.version(11);
  req.set(http::field::host, "h.test");
  req.insert("X-Custom", "v1");
  req.insert("x-custom", "v2");
  expect_head_as_beast(req);
  req.method_string("PURGEX");  // a method Beast has no verb for
  req.version(10);
  expect_head_as_beast(req);

  http::response_header<> res;
  res.result(404);
  res.version(11);
  res.set(http::field::content_length, "0");
  expect_head_as_beast(res);  // the standard reason phrase
  res.reason("Nope");
  expect_head_as_beast(res);  // the origin's own
  res.result(599);
  res.reason("");
  expect_head_as_beast(res);  // a code without a standard phrase
}

TEST(H1Write, ResponseHeadAndBodyAsTheyAre) {
  // What relay_body sends for an answer with a Content-Length: head, then the piece.
  asio::io_context io;
  beast::test::stream a(io), b(io);
  a.connect(b);
  std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
  const std::string body = "ok";
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const std::array<asio::const_buffer, 2> parts{asio::buffer(head), asio::buffer(body)};
        auto [ec, n] = co_await h1::write_buffers(a, parts);
        EXPECT_FALSE(ec);
        EXPECT_EQ(n, head.size() + body.size());
        done = true;
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(b.str(), head + body);
}

}  // namespace
}  // namespace airlock::proxy
