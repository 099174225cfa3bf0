#pragma once
// The untemplated half of tls::socket_stream (socket_stream.hpp): the OpenSSL object with a
// small BIO of ours, the received bytes OpenSSL has not taken yet, and the stream's deadline.
//
// The BIO writes to the socket itself (send(2) with MSG_DONTWAIT, and MSG_NOSIGNAL: a peer gone
// mid-write is an error, not SIGPIPE), and reads from the input buffer, which the stream's
// operations fill with Asio's async_receive. Reading through Asio rather than recv(2) in the BIO
// keeps the reactor's speculative read: a wait for readiness (socket::async_wait) costs an
// epoll_ctl(2) per wait in Asio 1.81, about two more system calls per proxied request. When the
// socket has no room or the buffer no bytes, the SSL call ends in SSL_ERROR_WANT_WRITE/READ and
// the operation waits (or receives) before calling again, as SSL_get_error(3) asks.
//
// The deadline is one lazy timer per stream (nginx's way with its event timers): expires_after
// only moves a time point, and the timer is re-armed when it fires early or when the deadline
// moves earlier than it, so a request's several deadlines cost no timer operations. When the
// deadline passes while an operation waits, the socket is closed and the operation ends with
// beast::error::timeout, as Beast's tcp_stream does; an operation that starts after it ends so
// at once.
//
// Thread safety: none; one stream is used on one thread (its worker's).

#include <openssl/ssl.h>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace airlock::tls::detail {

// What an SSL call needs next: nothing (it ended, with `ec` and `bytes`), or the socket to
// become readable or writable before the same call is made again.
enum class want : unsigned char { done, read, write };
struct step {
  want next = want::done;
  boost::system::error_code ec;
  std::size_t bytes = 0;
};

class stream_core : public std::enable_shared_from_this<stream_core> {
 public:
  using clock = std::chrono::steady_clock;

  // The timer runs on `executor`. Throws boost::system::system_error when OpenSSL cannot make
  // the SSL object.
  stream_core(SSL_CTX* ctx, const boost::asio::any_io_executor& executor);
  ~stream_core();
  stream_core(const stream_core&) = delete;
  stream_core& operator=(const stream_core&) = delete;

  SSL* ssl() const noexcept { return ssl_; }
  // The socket the next calls and waits use, given again by every operation: a Beast tcp_stream
  // moves its socket to a new place when it is moved itself.
  void attach(boost::asio::ip::tcp::socket& socket) noexcept { socket_ = &socket; }
  boost::asio::ip::tcp::socket& socket() noexcept { return *socket_; }

  // Room for `size` bytes already read from the socket (a ClientHello read to look at its
  // SNI), for OpenSSL to read first; the caller copies them there.
  boost::asio::mutable_buffer prefix_space(std::size_t size);
  // Whether nothing received waits above the socket: no record or part of one in OpenSSL's
  // buffer or in the input buffer.
  bool nothing_buffered() const noexcept;
  // An idle stream gives back OpenSSL's two 16 KiB buffers and the input buffer, when nothing
  // waits in them (SSL_free_buffers(3)); the next call allocates them again. False when
  // something does.
  bool release_buffers() noexcept;
  // Where the next receive goes (called when OpenSSL took everything; one receive at a time),
  // and what it brought.
  boost::asio::mutable_buffer input_space();
  bool receiving() const noexcept { return receiving_; }
  void received(std::size_t n) noexcept {
    in_end_ += n;
    receiving_ = false;
  }
  // The peer closed its side: OpenSSL's next read sees EOF (a close without close_notify is
  // then ssl::error::stream_truncated).
  void received_eof() noexcept { eof_ = true; }

  // One call each; handshake() needs set_accept_state() or set_connect_state() first.
  step handshake();
  step read(void* data, std::size_t size);
  step write(const void* data, std::size_t size);
  step shutdown();

  void expires_after(clock::duration d);
  void expires_never() noexcept;
  // The deadline passed: closes the socket and returns beast::error::timeout.
  boost::system::error_code timed_out();
  bool expired() const noexcept { return expired_; }
  void begin_wait() noexcept { ++waiting_; }
  // The result of a readiness wait, as the operation reports it: a wait the deadline ended is a
  // timeout.
  boost::system::error_code end_wait(const boost::system::error_code& ec) noexcept;

  // The BIO's side (stream_core.cpp).
  int bio_read(BIO* bio, char* out, std::size_t size, std::size_t* got);
  int bio_write(BIO* bio, const char* in, std::size_t size, std::size_t* put);
  long bio_pending() const noexcept { return static_cast<long>(in_end_ - in_pos_); }
  bool bio_eof() const noexcept { return eof_; }

 private:
  void before_call() noexcept;
  step after_call(int result, std::size_t bytes);
  void arm(clock::time_point at);
  void on_timer(unsigned generation, const boost::system::error_code& ec);

  SSL* ssl_ = nullptr;
  boost::asio::ip::tcp::socket* socket_ = nullptr;
  std::unique_ptr<char[]> in_;  // received, OpenSSL takes [in_pos_, in_end_)
  std::size_t in_size_ = 0;
  std::size_t in_pos_ = 0;
  std::size_t in_end_ = 0;
  bool receiving_ = false;
  int errno_ = 0;     // the socket error behind the last call's failure, if any
  bool eof_ = false;  // the peer closed its side

  boost::asio::steady_timer timer_;
  clock::time_point deadline_ = clock::time_point::max();
  clock::time_point armed_at_ = clock::time_point::max();
  unsigned generation_ = 0;  // which arm() a firing timer belongs to
  bool armed_ = false;
  bool expired_ = false;
  int waiting_ = 0;  // operations waiting for readiness now
};

}  // namespace airlock::tls::detail
