#pragma once
// Writing what a Beast serializer has to send (a head, a body piece, chunk framing) in as few
// buffers as possible. Beast's own http::async_write hands the stream a view of views
// (buffers_cat_view over every field, then buffers_prefix and buffers_suffix around it per
// write_some), and each layer walks that sequence again (Beast's tcp_stream, then Asio's
// buffer_sequence_adapter building the iovecs): on a small kept-alive request, about 28K of the
// proxy's 89K instructions went there (callgrind). Here the sequence is walked once: small
// buffers are copied together, large ones (a body piece) are passed by reference, and the result
// is written with one asio::async_write. An ssl::stream copies the sequence into one record
// itself (Asio's write_op linearises up to 8 KiB), so for it Beast's path is kept: counted, the
// gathering cost it about 2K instructions more per request.

#include "proxy/session_io.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/container/small_vector.hpp>

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>

namespace airlock::proxy::h1 {

// The next buffers of a serializer, gathered: runs of small buffers copied into one, anything
// of at least `copy_below` bytes kept by reference (it stays valid until the serializer moves on).
class gathered_output {
 public:
  static constexpr std::size_t copy_below = 2048;

  // Fills the buffers from sr.next(); ec as next() sets it (need_buffer: a buffer_body with
  // `more` set has nothing to send until its next piece). False when next() had nothing to
  // give (the serializer found the message complete).
  template <class Serializer>
  bool take(Serializer& sr, boost::system::error_code& ec) {
    parts_.clear();
    copied_.clear();
    std::size_t small = 0;
    bool given = false;
    sr.next(ec, [&](boost::system::error_code&, const auto& buffers) {
      given = true;
      for (auto it = boost::asio::buffer_sequence_begin(buffers);
           it != boost::asio::buffer_sequence_end(buffers); ++it) {
        const boost::asio::const_buffer b(*it);
        if (b.size() == 0) continue;
        if (b.size() < copy_below) small += b.size();
        parts_.push_back(b);
      }
    });
    if (ec || small == 0) return given;
    // Second pass: copy the small ones into one string reserved up front (no reallocation, so
    // the buffers pointing into it stay valid), merging neighbours.
    copied_.reserve(small);
    std::size_t kept = 0;
    bool last_copied = false;
    for (const auto& b : parts_) {
      if (b.size() >= copy_below) {
        parts_[kept++] = b;
        last_copied = false;
        continue;
      }
      const char* at = copied_.data() + copied_.size();
      copied_.append(static_cast<const char*>(b.data()), b.size());
      if (last_copied) {
        auto& prev = parts_[kept - 1];
        prev = boost::asio::const_buffer(prev.data(), prev.size() + b.size());
      } else {
        parts_[kept++] = boost::asio::const_buffer(at, b.size());
      }
      last_copied = true;
    }
    parts_.resize(kept);
    return given;
  }

  const auto& buffers() const noexcept { return parts_; }

 private:
  boost::container::small_vector<boost::asio::const_buffer, 8> parts_;
  std::string copied_;
};

// The serializer's buffers written through gathered_output until the message is done or its
// buffer_body piece is out (need_buffer), as http::async_write does.
template <class Stream, class Serializer>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write_gathered(
    Stream& stream, Serializer& sr) {
  gathered_output out;
  std::size_t total = 0;
  boost::system::error_code ec;
  while (!sr.is_done()) {
    if (!out.take(sr, ec) || ec) break;
    auto [wec, n] = co_await boost::asio::async_write(stream, out.buffers(), use_tuple);
    sr.consume(n);
    total += n;
    if (wec) {
      ec = wec;
      break;
    }
  }
  co_return std::tuple{ec, total};
}

template <class Stream>
struct is_tls_stream : std::false_type {};
template <class Next>
struct is_tls_stream<boost::asio::ssl::stream<Next>> : std::true_type {};

// http::async_write(stream, sr) with the same result (the bytes written; need_buffer when a
// buffer_body piece is out and the message is not done): gathered on a plain stream, Beast's
// own on a TLS one (see the top of this file). Not a coroutine itself: no frame of its own.
template <class Stream, class Serializer>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> async_write(
    Stream& stream, Serializer& sr) {
  if constexpr (is_tls_stream<Stream>::value)
    return boost::beast::http::async_write(stream, sr, use_tuple);
  else
    return write_gathered(stream, sr);
}

}  // namespace airlock::proxy::h1
