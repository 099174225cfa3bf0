#pragma once
// Writing what a Beast serializer has to send (a head, a body piece, chunk framing) in as few
// buffers as possible. Beast's own http::async_write hands the stream a view of views
// (buffers_cat_view over every field, then buffers_prefix and buffers_suffix around it per
// write_some), and each layer walks that sequence again (Beast's tcp_stream, then Asio's
// buffer_sequence_adapter building the iovecs): on a small kept-alive request, about 28K of the
// proxy's 89K instructions went there (callgrind). Here the sequence is walked once: small
// buffers are copied together, large ones (a body piece) are passed by reference, and the result
// is written with one asio::async_write. A TLS stream copies the sequence into one record
// itself (tls::socket_stream linearises up to 8 KiB, as Asio's ssl write did), so for it
// Beast's path is kept: counted, the gathering cost it about 2K instructions more per request.

#include "proxy/session_io.hpp"
#include "tls/socket_stream.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/container/small_vector.hpp>

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
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

// Sends what the socket under `stream` takes at once, without waiting (sendmsg(2) with
// MSG_DONTWAIT; MSG_NOSIGNAL as Asio does): the bytes sent, 0 when it would block. A stream
// without a socket (Beast's test::stream) sends nothing here.
template <class Stream, class Buffers>
std::size_t send_now(Stream& stream, const Buffers& buffers, boost::system::error_code& ec) {
  auto& lowest = boost::beast::get_lowest_layer(stream);
  if constexpr (requires { lowest.socket().native_handle(); }) {
    constexpr std::size_t max_parts = 16;
    ::iovec iov[max_parts];
    std::size_t parts = 0;
    for (const auto& b : buffers) {
      if (parts == max_parts) break;
      iov[parts++] = {const_cast<void*>(b.data()), b.size()};
    }
    ::msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = parts;
    const auto n = ::sendmsg(lowest.socket().native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      ec.assign(errno, boost::system::system_category());
    return 0;
  } else {
    return 0;
  }
}

// The serializer's buffers written through gathered_output until the message is done or its
// buffer_body piece is out (need_buffer), as http::async_write does. Each piece is first offered
// to the socket at once: a small answer almost always fits in its send buffer, and then no
// timeout is armed and cancelled and no operation goes through the reactor (two timer
// re-arms and their timerfd_settime per request). Whatever does not fit is written by the
// stream, under the timeout the caller set.
template <class Stream, class Serializer>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write_gathered(
    Stream& stream, Serializer& sr) {
  gathered_output out;
  std::size_t total = 0;
  boost::system::error_code ec;
  while (!sr.is_done()) {
    if (!out.take(sr, ec) || ec) break;
    const auto& buffers = out.buffers();
    const std::size_t size = boost::asio::buffer_size(buffers);
    std::size_t n = send_now(stream, buffers, ec);
    if (!ec && n < size) {
      boost::beast::buffers_suffix<std::decay_t<decltype(buffers)>> rest(buffers);
      rest.consume(n);
      auto [wec, more] = co_await boost::asio::async_write(stream, rest, use_tuple);
      ec = wec;
      n += more;
    }
    sr.consume(n);
    total += n;
    if (ec) break;
  }
  co_return std::tuple{ec, total};
}

template <class Stream>
struct is_tls_stream : std::false_type {};
template <class Next>
struct is_tls_stream<tls::socket_stream<Next>> : std::true_type {};

// `buffers` written as write_gathered writes a piece: offered to a plain socket at once, the
// rest by the stream.
template <class Stream, class Buffers>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write_now_or_later(
    Stream& stream, Buffers buffers) {
  boost::system::error_code ec;
  const std::size_t size = boost::asio::buffer_size(buffers);
  std::size_t n = send_now(stream, buffers, ec);
  if (!ec && n < size) {
    boost::beast::buffers_suffix<Buffers> rest(buffers);
    rest.consume(n);
    auto [wec, more] = co_await boost::asio::async_write(stream, rest, use_tuple);
    ec = wec;
    n += more;
  }
  co_return std::tuple{ec, n};
}

// Writes `buffers` (they must stay valid until it completes): at once where the socket takes
// them, on a TLS stream as one write (Asio's ssl write copies small ones into one record).
template <class Stream, class Buffers>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> write_buffers(
    Stream& stream, const Buffers& buffers) {
  if constexpr (is_tls_stream<Stream>::value)
    return boost::asio::async_write(stream, buffers, use_tuple);
  else
    return write_now_or_later(stream, buffers);
}

// The head as Beast's serializer writes it (boost/beast/http/impl/fields.hpp, writer): the
// start line, each field as "name: value" CRLF in order, an empty line. Written by hand because
// Beast's view of a head is a buffers_cat_view over every field, which costs more to walk than
// to copy.
template <class Fields>
void append_start_line(std::string& out, const boost::beast::http::header<true, Fields>& h) {
  out.append(h.method_string());
  out.push_back(' ');
  out.append(h.target());
  out.append(" HTTP/");
  out.push_back(static_cast<char>('0' + h.version() / 10));
  out.push_back('.');
  out.push_back(static_cast<char>('0' + h.version() % 10));
  out.append("\r\n");
}
template <class Fields>
void append_start_line(std::string& out, const boost::beast::http::header<false, Fields>& h) {
  const unsigned code = h.result_int();
  const char line[] = {'H',
                       'T',
                       'T',
                       'P',
                       '/',
                       static_cast<char>('0' + h.version() / 10),
                       '.',
                       static_cast<char>('0' + h.version() % 10),
                       ' ',
                       static_cast<char>('0' + code / 100),
                       static_cast<char>('0' + (code / 10) % 10),
                       static_cast<char>('0' + code % 10),
                       ' '};
  out.append(line, sizeof line);
  out.append(h.reason());  // the origin's phrase, or the standard one where it sent none
  out.append("\r\n");
}
template <bool IsRequest, class Fields>
void append_head(std::string& out, const boost::beast::http::header<IsRequest, Fields>& h) {
  out.reserve(out.size() + 1024);  // one allocation for a usual head, not one per doubling
  append_start_line(out, h);
  for (const auto& f : h) {
    out.append(f.name_string());
    out.append(": ");
    out.append(f.value());
    out.append("\r\n");
  }
  out.append("\r\n");
}

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
