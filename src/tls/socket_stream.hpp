#pragma once
// A TLS stream that drives OpenSSL straight over the TCP socket, in place of
// boost::asio::ssl::stream over Beast's tcp_stream. Asio's stream passes every record through a
// memory BIO pair and a composed operation of its own, and clears the thread's error queue
// before every SSL call; the tcp_stream under it arms and cancels a timer for every read and
// write. Here one operation makes the SSL call and, when OpenSSL wants bytes, receives them with
// the socket's own async_receive (the reactor's speculative read), or when it wants room, waits
// for it, then calls again (SSL_get_error(3)); OpenSSL writes to the socket itself
// (stream_core.hpp). What stays the same: the operations' signatures and error codes
// (asio::error::eof after close_notify, ssl::error::stream_truncated for a close without it,
// OpenSSL's errors in Asio's ssl category, beast::error::timeout), so Beast's HTTP reads and
// writes and Asio's composed writes run over it unchanged.
//
//   tls::socket_stream<beast::tcp_stream&> down(client, *server_ctx);  // the client's side
//   co_await down.async_handshake(ssl::stream_base::server, already_read, use_tuple);
//
// Timeouts: expires_after/expires_never on this stream (stream_core.hpp), not on the transport:
// the receives and waits do not go through the transport's operations. Cancelling or closing the
// transport's socket ends a waiting operation with operation_aborted, as before.
//
// Thread safety: as Asio's streams: one read and one write may be outstanding at a time, all on
// the stream's executor's thread.

#include "tls/stream_core.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>

#include <array>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace airlock::tls {
namespace detail {

// One SSL call, made again after each receive into the input buffer (OpenSSL wanted to read)
// or wait for room (it wanted to write), until it ends; completes with (error_code, bytes) or,
// for WithBytes false, (error_code).
template <class Call, bool WithBytes>
struct io_op {
  io_op(std::shared_ptr<stream_core> c, Call k, std::size_t r)
      : core(std::move(c)), call(std::move(k)), reported(r) {}

  // Shared: a stream destroyed while its operation waits (its socket closed with it) leaves the
  // operation a live core to finish on, with operation_aborted.
  std::shared_ptr<stream_core> core;
  Call call;
  std::size_t reported;  // a buffered handshake reports what it was handed
  enum class stage : unsigned char { start, received, waited, posted } at = stage::start;
  bool suspended = false;
  boost::system::error_code ec;
  std::size_t bytes = 0;

  template <class Self>
  void operator()(Self& self, boost::system::error_code io_ec = {}, std::size_t n = 0) {
    switch (at) {
      case stage::posted:
        return complete(self);
      case stage::received:
        io_ec = core->end_wait(io_ec);
        core->received(n);  // (ends the receive too)
        if (io_ec == boost::asio::error::eof)
          core->received_eof();  // OpenSSL tells a clean close from a truncation
        else if (io_ec)
          return finish(self, {want::done, io_ec, 0});
        break;
      case stage::waited:
        io_ec = core->end_wait(io_ec);
        if (io_ec) return finish(self, {want::done, io_ec, 0});
        break;
      case stage::start:
        if (core->expired()) return finish(self, {want::done, core->timed_out(), 0});
        break;
    }
    const step s = call(*core);
    if (s.next == want::done) return finish(self, s);
    if (s.next == want::read && core->receiving()) {
      // A second operation that wants to read while one receives: a write that wants the
      // peer's bytes, which only renegotiation (refused, stream_core.cpp) would ask for. Fail
      // rather than let two receives share the input buffer.
      return finish(self, {want::done, boost::asio::error::in_progress, 0});
    }
    suspended = true;
    core->begin_wait();
    if (s.next == want::read) {
      at = stage::received;
      core->socket().async_receive(core->input_space(), std::move(self));
    } else {
      at = stage::waited;
      core->socket().async_wait(boost::asio::ip::tcp::socket::wait_write, std::move(self));
    }
  }

  template <class Self>
  void finish(Self& self, const step& s) {
    ec = s.ec;
    bytes = reported != 0 ? reported : s.bytes;
    if (suspended) return complete(self);
    // Asio's rule: a handler is never called from inside the function that started the
    // operation. The reactor's own sockets post such a completion too.
    at = stage::posted;
    boost::asio::post(std::move(self));
  }

  template <class Self>
  void complete(Self& self) {
    if constexpr (WithBytes)
      self.complete(ec, bytes);
    else
      self.complete(ec);
  }
};

template <class Buffers>
struct read_call {
  Buffers buffers;
  step operator()(stream_core& core) const {
    // The first non-empty buffer, as Asio's ssl::stream reads (one record at most per call).
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() != 0) return core.read(b.data(), b.size());
    }
    return {want::done, {}, 0};
  }
};

template <class Buffers>
struct write_call {
  Buffers buffers;
  step operator()(stream_core& core) const {
    // Several small buffers (a head and its body) go as one record: copied into one buffer of
    // 8 KiB, as Asio's ssl::stream linearises them; a larger first buffer goes alone.
    auto it = boost::asio::buffer_sequence_begin(buffers);
    const auto end = boost::asio::buffer_sequence_end(buffers);
    while (it != end && boost::asio::const_buffer(*it).size() == 0)
      ++it;
    if (it == end) return {want::done, {}, 0};
    boost::asio::const_buffer first(*it);
    auto next = it;
    if (++next == end || first.size() >= storage_size)
      return core.write(first.data(), first.size());
    std::array<unsigned char, storage_size> storage;
    std::size_t used = 0;
    for (; it != end && used < storage_size; ++it) {
      boost::asio::const_buffer b(*it);
      const std::size_t n = std::min(b.size(), storage_size - used);
      std::memcpy(storage.data() + used, b.data(), n);
      used += n;
    }
    return core.write(storage.data(), used);
  }
  static constexpr std::size_t storage_size = 8192;
};

struct handshake_call {
  step operator()(stream_core& core) const { return core.handshake(); }
};
struct shutdown_call {
  step operator()(stream_core& core) const { return core.shutdown(); }
};

}  // namespace detail

template <class Transport>
class socket_stream {
 public:
  using transport_type = std::remove_reference_t<Transport>;
  using executor_type = typename transport_type::executor_type;
  using handshake_type = boost::asio::ssl::stream_base::handshake_type;

  // `transport`: what makes the TCP connection (a tcp_stream, or a reference to one); nothing
  // is read or written through it once the stream exists, but it may connect the socket first.
  template <class Arg>
  socket_stream(Arg&& transport, boost::asio::ssl::context& ctx)
      : transport_(std::forward<Arg>(transport)),
        core_(std::make_shared<detail::stream_core>(ctx.native_handle(),
                                                    transport_.get_executor())) {}

  SSL* native_handle() const noexcept { return core_->ssl(); }
  transport_type& transport() noexcept { return transport_; }
  boost::asio::ip::tcp::socket& socket() noexcept { return transport_.socket(); }
  executor_type get_executor() noexcept { return transport_.get_executor(); }

  void expires_after(std::chrono::steady_clock::duration d) { core_->expires_after(d); }
  void expires_never() noexcept { core_->expires_never(); }
  void cancel() { transport_.cancel(); }
  void close() { transport_.close(); }

  // Whether nothing received waits above the socket: a record, decrypted or not, in OpenSSL's
  // buffer or the input buffer. Bytes there past an origin's answer would be taken for the next
  // answer, and the pool's own check (a peek at the socket) does not see them.
  bool nothing_buffered() const noexcept { return core_->nothing_buffered(); }
  // For a stream left idle (a pooled upstream): its buffers go back (stream_core).
  bool release_buffers() noexcept { return core_->release_buffers(); }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return start<true>(detail::read_call<MutableBuffers>{buffers}, std::forward<Token>(token));
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return start<true>(detail::write_call<ConstBuffers>{buffers}, std::forward<Token>(token));
  }

  template <class Token>
  auto async_handshake(handshake_type type, Token&& token) {
    set_role(type);
    return start<false>(detail::handshake_call{}, std::forward<Token>(token));
  }

  // `already_read`: bytes of the handshake read from the socket before (a ClientHello). All of
  // them are taken; the completion reports their count, as Asio's buffered handshake does.
  template <class ConstBuffer, class Token>
  auto async_handshake(handshake_type type, const ConstBuffer& already_read, Token&& token) {
    set_role(type);
    const std::size_t size = boost::asio::buffer_copy(
        core_->prefix_space(boost::asio::buffer_size(already_read)), already_read);
    return start<true>(detail::handshake_call{}, std::forward<Token>(token), size);
  }

  // Sends close_notify and waits for the peer's (under the stream's deadline).
  template <class Token>
  auto async_shutdown(Token&& token) {
    return start<false>(detail::shutdown_call{}, std::forward<Token>(token));
  }

 private:
  void set_role(handshake_type type) {
    if (type == boost::asio::ssl::stream_base::server)
      SSL_set_accept_state(core_->ssl());
    else
      SSL_set_connect_state(core_->ssl());
  }

  template <bool WithBytes, class Call, class Token>
  auto start(Call call, Token&& token, std::size_t reported = 0) {
    core_->attach(transport_.socket());
    using signature = std::conditional_t<WithBytes, void(boost::system::error_code, std::size_t),
                                         void(boost::system::error_code)>;
    return boost::asio::async_compose<Token, signature>(
        detail::io_op<Call, WithBytes>(core_, std::move(call), reported), token,
        transport_.socket());
  }

  Transport transport_;
  std::shared_ptr<detail::stream_core> core_;
};

}  // namespace airlock::tls
