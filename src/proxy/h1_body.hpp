#pragma once
// The HTTP/1.1 codec's body relays: a body read from one side through a parser and written to
// the other through a serializer, piece by piece (the relay loop of Beast's
// example/doc/http_examples.hpp), paced by the exchange's byte rates, with each side's error
// kept apart so the caller knows whom to blame. The filter chain sees each piece: a request
// body before the piece is sent (a filter may refuse it), a response body when a filter watches
// or rewrites it (what it releases is written as it comes, re-framed as chunks).

#include "filters/chain.hpp"
#include "net/http_framing.hpp"
#include "proxy/byte_throttle.hpp"
#include "proxy/h1_write.hpp"
#include "proxy/session_io.hpp"
#include "proxy/worker.hpp"

#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <chrono>
#include <string>
#include <tuple>
#include <utility>

namespace airlock::proxy::h1 {

namespace http = boost::beast::http;
inline constexpr std::size_t relay_buffer_size = 64 * 1024;

struct relay_result {
  boost::system::error_code read_ec;   // error on the side being read
  boost::system::error_code write_ec;  // error on the side being written
  std::uint64_t bytes = 0;             // read from the source
  std::uint64_t bytes_written = 0;     // body bytes written (after filters)
  bool stopped = false;                // a filter refused or failed: nothing more was sent
};

// Points the parser's body at `buf` for the next read of at most `piece` bytes; after the read,
// piece - body().size bytes of body came. (A plain function, not a coroutine: a frame per read
// would cost more than it saves.)
template <bool IsRequest>
void prepare_piece(http::parser<IsRequest, http::buffer_body>& parser, char* buf,
                   std::size_t piece) {
  auto& b = parser.get().body();
  b.data = buf;
  b.size = piece;
}

// The most a body's reader keeps that the parser has not taken: a chunk's size line (with its
// extensions) or the trailer section, not ended yet (RFC 9112 section 7.1). Beast 1.81 bounds
// neither, so a peer that never ends one would grow the buffer until the proxy runs out of
// memory; past this the body is refused (http::error::header_limit). As much as a head may be
// by default (limits.header_bytes).
inline constexpr std::size_t max_unended_body_line = 64 * 1024;

// A connection left idle keeps no large read buffer: once empty, one grown past 16 KiB (a body
// was read into it) is freed, and the next read starts small again.
inline void release_large_buffer(boost::beast::flat_buffer& buffer) {
  if (buffer.size() == 0 && buffer.capacity() > 16 * 1024) buffer.shrink_to_fit();
}

// http::async_read_some(from, buffer, parser) for a body, with two differences: a chunked body's
// bytes that would trip Beast 1.81's assertion in parse_chunk_header (net::chunk_put_must_wait)
// are not handed to the parser until more have arrived (at the end of the stream they are
// http::error::partial_message), and what waits unparsed is bounded (max_unended_body_line).
// Beast's own read loop puts whatever it has, so it cannot be used here. The result is the
// parser's (need_buffer when the body piece is full).
template <class ReadStream, bool IsRequest>
boost::asio::awaitable<boost::system::error_code> read_some_body(
    ReadStream& from, boost::beast::flat_buffer& buffer,
    http::parser<IsRequest, http::buffer_body>& parser) {
  for (;;) {
    const auto data = buffer.cdata();
    const std::string_view unparsed(static_cast<const char*>(data.data()), data.size());
    const bool wait = net::chunk_put_must_wait(parser.chunked(), unparsed);
    if (!unparsed.empty() && !wait) {
      boost::system::error_code ec;
      buffer.consume(parser.put(data, ec));
      if (ec != http::error::need_more) co_return ec;
    }
    // (What is left waits for the end of a line or of the trailers.)
    if (buffer.size() > max_unended_body_line) co_return http::error::header_limit;
    // As Beast's read_some: read more into the buffer, bounded by its limit.
    const std::size_t room = boost::beast::read_size(buffer, 65536);
    if (room == 0) co_return http::error::buffer_overflow;
    auto [ec, n] = co_await from.async_read_some(buffer.prepare(room), use_tuple);
    buffer.commit(n);
    if (ec == boost::asio::error::eof) {
      if (wait) co_return http::error::partial_message;
      if (!parser.got_some()) co_return http::error::end_of_stream;
      boost::system::error_code eof_ec;
      parser.put_eof(eof_ec);
      co_return eof_ec;
    }
    if (ec) co_return ec;
  }
}

// Relays a body as it is. `observer` (may be null): a request body's chain, shown every piece
// before it is written; a refusal stops the relay before that piece. `answered` (may be null):
// a response's chain, told when the body has been read whole, before its last write.
template <bool IsRequest, class ReadStream, class WriteStream>
boost::asio::awaitable<relay_result> relay_body(
    worker& w, ReadStream& from, boost::beast::flat_buffer& from_buffer,
    http::parser<IsRequest, http::buffer_body>& parser, WriteStream& to,
    http::serializer<IsRequest, http::buffer_body>& sr, std::chrono::milliseconds idle_timeout,
    const byte_throttle& throttle, filters::chain* observer = nullptr,
    filters::chain* answered = nullptr) {
  relay_result result;
  // A message not chunked whose head is not out yet (the usual answer with a Content-Length):
  // its head and body pieces go out as they are, without the serializer (h1_write.hpp); the
  // serializer stays unused.
  const bool as_is = !sr.is_header_done() && !sr.get().chunked();
  std::string head;
  if (as_is) append_head(head, sr.get());
  bool sent_last = false;
  // Lent by the worker only while a body moves, so idle connections hold no large buffer.
  auto buf = w.borrow_buffer();
  const std::size_t piece = throttle.piece(buf.size());
  // Read in large pieces: a flat_buffer with little capacity would be read 512 bytes at a time.
  // Not for a body already buffered whole (a small answer that came with its head): that would
  // be a 64 KiB allocation and a copy per exchange for nothing.
  const auto remaining = parser.content_length_remaining();
  if (!parser.is_done() && !(remaining && *remaining <= from_buffer.size()))
    from_buffer.reserve(relay_buffer_size);
  auto& b = parser.get().body();
  do {
    if (!parser.is_done()) {
      prepare_piece(parser, buf.data(), piece);
      set_timeout(from, idle_timeout);
      // read_some, not read: pass on what has arrived (a server-sent event, a slow chunk)
      // instead of waiting for the buffer to fill.
      auto ec = co_await read_some_body(from, from_buffer, parser);
      if (ec == http::error::need_buffer) ec = {};
      const std::size_t got = piece - b.size;
      if (ec) {
        result.read_ec = ec;
        co_return result;
      }
      if (got == 0 && !parser.is_done()) continue;  // only framing so far (a chunk header)
      if (observer &&
          !observer->request_body(std::string_view(buf.data(), got), parser.is_done()).passes()) {
        result.stopped = true;
        co_return result;
      }
      if (throttle) co_await throttle.pace(got);
      // An empty piece must be passed as "no data": for a chunked message the serializer would
      // write a zero-size chunk, which is the end of the body.
      b.data = got ? buf.data() : nullptr;
      b.size = got;
      b.more = !parser.is_done();
      result.bytes += got;
      result.bytes_written += got;
    } else {
      b.data = nullptr;
      b.size = 0;
      b.more = false;
    }
    if (answered && parser.is_done()) answered->answered();
    // The first write carries the head too (one send for a small message).
    set_timeout(to, idle_timeout);
    boost::system::error_code ec;
    if (as_is) {
      const std::array<boost::asio::const_buffer, 2> parts{
          boost::asio::buffer(head), boost::asio::const_buffer(b.data, b.data ? b.size : 0)};
      std::tie(ec, std::ignore) = co_await write_buffers(to, parts);
      head.clear();
      sent_last = !b.more;
    } else {
      std::tie(ec, std::ignore) = co_await h1::async_write(to, sr);
      if (ec == http::error::need_buffer) ec = {};
      sent_last = sr.is_done();
    }
    if (ec) {
      result.write_ec = ec;
      co_return result;
    }
  } while (!parser.is_done() || !sent_last);
  release_large_buffer(from_buffer);
  co_return result;
}

// Writes `out` as the next piece of a buffer_body message (the last one when !more), then
// clears it. An empty piece is passed as "no data" (see relay_body).
template <class WriteStream, bool IsRequest>
boost::asio::awaitable<boost::system::error_code> write_body_piece(
    WriteStream& to, http::serializer<IsRequest, http::buffer_body>& sr,
    http::buffer_body::value_type& b, std::string& out, bool more,
    std::chrono::milliseconds idle_timeout) {
  b.data = out.empty() ? nullptr : out.data();
  b.size = out.size();
  b.more = more;
  set_timeout(to, idle_timeout);
  auto [ec, n] = co_await h1::async_write(to, sr);
  out.clear();
  if (ec == http::error::need_buffer) ec = {};
  co_return ec;
}

// Relays a response body through the chain's response-body filters: each piece read from
// upstream goes through them, and whatever they release is written to the client at once (with
// the head, when that has not been written yet). A filter that has seen enough ends the body.
template <class ReadStream, class WriteStream>
boost::asio::awaitable<relay_result> relay_filtered(
    worker& w, ReadStream& from, boost::beast::flat_buffer& from_buffer,
    http::response_parser<http::buffer_body>& parser, WriteStream& to,
    http::response_serializer<http::buffer_body>& sr, std::chrono::milliseconds idle_timeout,
    const byte_throttle& throttle, filters::chain& chain) {
  relay_result result;
  auto buf = w.borrow_buffer();
  const std::size_t piece = throttle.piece(buf.size());
  if (!parser.is_done()) from_buffer.reserve(relay_buffer_size);
  std::string out;
  bool enough = false;
  // The parser and the serializer share the message's body: the parser reads into `buf`, the
  // serializer writes from `out`.
  auto& b = parser.get().body();
  while (!parser.is_done() && !enough) {
    prepare_piece(parser, buf.data(), piece);
    set_timeout(from, idle_timeout);
    auto ec = co_await read_some_body(from, from_buffer, parser);
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t got = piece - b.size;
    if (ec) {
      result.read_ec = ec;
      co_return result;
    }
    if (got == 0) continue;
    if (throttle) co_await throttle.pace(got);
    result.bytes += got;
    if (!chain.response_body(std::string_view(buf.data(), got), false, out, enough).passes()) {
      result.stopped = true;
      co_return result;
    }
    // When the body is complete, what is left goes out with the end of it, in one write.
    if (out.empty() || parser.is_done()) continue;
    result.bytes_written += out.size();
    result.write_ec = co_await write_body_piece(to, sr, b, out, true, idle_timeout);
    if (result.write_ec) co_return result;
  }
  if (!chain.response_body({}, true, out, enough).passes()) {
    result.stopped = true;
    co_return result;
  }
  chain.answered();
  result.bytes_written += out.size();
  result.write_ec = co_await write_body_piece(to, sr, b, out, false, idle_timeout);
  co_return result;
}

// Reads a request body whole into `out` (the parser's body limit bounds it), for a filter that
// must see all of it before anything is forwarded.
template <class Client>
boost::asio::awaitable<boost::system::error_code> read_whole_body(
    Client& client, boost::beast::flat_buffer& buffer, http::request_parser<http::buffer_body>& p,
    std::string& out, std::chrono::milliseconds idle_timeout) {
  constexpr std::size_t piece = 64 * 1024;
  while (!p.is_done()) {
    const std::size_t old = out.size();
    out.resize(old + piece);
    p.get().body().data = out.data() + old;
    p.get().body().size = piece;
    set_timeout(client, idle_timeout);
    auto ec = co_await read_some_body(client, buffer, p);
    out.resize(old + (piece - p.get().body().size));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return ec;
  }
  co_return boost::system::error_code{};
}

}  // namespace airlock::proxy::h1
