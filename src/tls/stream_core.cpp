#include "tls/stream_core.hpp"

#include <sys/socket.h>

#include <openssl/err.h>
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace airlock::tls::detail {
namespace {

stream_core* core_of(BIO* bio) {
  return static_cast<stream_core*>(BIO_get_data(bio));
}

int read_ex(BIO* bio, char* out, std::size_t size, std::size_t* got) {
  BIO_clear_retry_flags(bio);
  return core_of(bio)->bio_read(bio, out, size, got);
}

int write_ex(BIO* bio, const char* in, std::size_t size, std::size_t* put) {
  BIO_clear_retry_flags(bio);
  return core_of(bio)->bio_write(bio, in, size, put);
}

long control(BIO* bio, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // send(2) leaves nothing in user space to flush
      return 1;
    case BIO_CTRL_PENDING:
      return core_of(bio)->bio_pending();
    case BIO_CTRL_EOF:  // OpenSSL asks this to tell a peer's EOF from an error (ssl3_read_n)
      return core_of(bio)->bio_eof() ? 1 : 0;
    default:  // no push/pop, no kTLS, no datagram controls: "not supported"
      return 0;
  }
}

const BIO_METHOD* socket_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "airlock socket");
    if (m == nullptr || BIO_meth_set_read_ex(m, read_ex) != 1 ||
        BIO_meth_set_write_ex(m, write_ex) != 1 || BIO_meth_set_ctrl(m, control) != 1)
      throw boost::system::system_error(boost::asio::error::no_memory, "BIO_meth_new");
    return m;
  }();
  return method;
}

// What one receive asks for: a whole record (16 KiB and its overhead), as Asio's ssl::stream.
constexpr std::size_t input_size = 17 * 1024;

bool would_block(int e) {
  return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

}  // namespace

stream_core::stream_core(SSL_CTX* ctx, const boost::asio::any_io_executor& executor)
    : timer_(executor) {
  ssl_ = SSL_new(ctx);
  BIO* bio = ssl_ ? BIO_new(socket_method()) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl_);
    ERR_clear_error();
    throw boost::system::system_error(boost::asio::error::no_memory, "SSL_new");
  }
  BIO_set_data(bio, this);
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);  // one reference, owned by ssl_
  // A record may be written in several sends (partial writes), from a buffer that moved
  // between them (the caller's). No SSL_MODE_RELEASE_BUFFERS (Asio's ssl::stream sets it): it
  // frees and allocates OpenSSL's two 16 KiB buffers around every record.
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // TLS 1.2 renegotiation, either side's, is refused: nothing here needs it, and a write that
  // wanted to read (or a read that wanted a handshake) would need both directions at once.
  SSL_set_options(ssl_, SSL_OP_NO_RENEGOTIATION);
  // Take what the input buffer has, not a record header and then its body: fewer BIO calls.
  SSL_set_read_ahead(ssl_, 1);
}

stream_core::~stream_core() {
  SSL_free(ssl_);
}

boost::asio::mutable_buffer stream_core::prefix_space(std::size_t size) {
  in_size_ = std::max(input_size, size);
  in_ = std::make_unique_for_overwrite<char[]>(in_size_);
  in_pos_ = 0;
  in_end_ = size;
  return {in_.get(), size};
}

bool stream_core::nothing_buffered() const noexcept {
  return SSL_has_pending(ssl_) == 0 && in_pos_ == in_end_;
}

bool stream_core::release_buffers() noexcept {
  if (receiving_ || !nothing_buffered() || SSL_free_buffers(ssl_) != 1) return false;
  in_.reset();
  in_size_ = in_pos_ = in_end_ = 0;
  return true;
}

boost::asio::mutable_buffer stream_core::input_space() {
  if (!in_) {
    in_size_ = input_size;
    in_ = std::make_unique_for_overwrite<char[]>(in_size_);
  }
  receiving_ = true;
  if (in_pos_ == in_end_) {
    in_pos_ = in_end_ = 0;
  } else if (in_end_ == in_size_) {  // (OpenSSL wants more only once it took all; kept safe)
    std::memmove(in_.get(), in_.get() + in_pos_, in_end_ - in_pos_);
    in_end_ -= in_pos_;
    in_pos_ = 0;
  }
  return {in_.get() + in_end_, in_size_ - in_end_};
}

int stream_core::bio_read(BIO* bio, char* out, std::size_t size, std::size_t* got) {
  if (in_pos_ < in_end_) {
    const std::size_t n = std::min(size, in_end_ - in_pos_);
    std::memcpy(out, in_.get() + in_pos_, n);
    in_pos_ += n;
    *got = n;
    return 1;
  }
  *got = 0;
  if (!eof_) BIO_set_retry_read(bio);  // the operation receives more, then calls again
  return 0;
}

int stream_core::bio_write(BIO* bio, const char* in, std::size_t size, std::size_t* put) {
  if (socket_ == nullptr) {  // (every SSL call is an operation's, which attaches it first)
    *put = 0;
    errno_ = EBADF;
    return 0;
  }
  const ssize_t n = ::send(socket_->native_handle(), in, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n >= 0) {
    *put = static_cast<std::size_t>(n);
    return 1;
  }
  *put = 0;
  if (would_block(errno))
    BIO_set_retry_write(bio);
  else
    errno_ = errno;
  return 0;
}

void stream_core::before_call() noexcept {
  // SSL_get_error(3): the thread's error queue must be empty before the call, or a stale entry
  // reads as this call's failure. Peeking is cheaper than clearing, and it is almost always
  // empty.
  if (ERR_peek_error() != 0) ERR_clear_error();
  errno_ = 0;
}

step stream_core::after_call(int result, std::size_t bytes) {
  if (result == 1) return {want::done, {}, bytes};
  const int error = SSL_get_error(ssl_, result);
  if (error == SSL_ERROR_WANT_READ) return {want::read, {}, 0};
  if (error == SSL_ERROR_WANT_WRITE) return {want::write, {}, 0};
  if (error == SSL_ERROR_ZERO_RETURN) return {want::done, boost::asio::error::eof, 0};
  const unsigned long queued = ERR_get_error();
  ERR_clear_error();
  boost::system::error_code ec;
  if (error == SSL_ERROR_SSL && ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ec = boost::asio::ssl::error::stream_truncated;  // closed without close_notify
  } else if (queued != 0) {
    ec.assign(static_cast<int>(queued), boost::asio::error::get_ssl_category());
  } else if (errno_ != 0) {
    ec.assign(errno_, boost::system::system_category());
  } else if (eof_) {
    ec = boost::asio::ssl::error::stream_truncated;
  } else {
    ec = boost::asio::ssl::error::unspecified_system_error;
  }
  return {want::done, ec, 0};
}

step stream_core::handshake() {
  before_call();
  return after_call(SSL_do_handshake(ssl_), 0);
}

step stream_core::read(void* data, std::size_t size) {
  before_call();
  std::size_t n = 0;
  const int r = SSL_read_ex(ssl_, data, size, &n);
  return after_call(r, n);
}

step stream_core::write(const void* data, std::size_t size) {
  before_call();
  std::size_t n = 0;
  const int r = SSL_write_ex(ssl_, data, size, &n);
  return after_call(r, n);
}

step stream_core::shutdown() {
  before_call();
  // SSL_shutdown(3): 0 means our close_notify went and the peer's has not come yet; the second
  // call reads it (or wants to read). Asio's ssl::stream does the same.
  int r = SSL_shutdown(ssl_);
  if (r == 0) r = SSL_shutdown(ssl_);
  return after_call(r == 1 ? 1 : (r == 0 ? -1 : r), 0);
}

void stream_core::expires_after(clock::duration d) {
  deadline_ = clock::now() + d;
  expired_ = false;
  if (!armed_ || deadline_ < armed_at_) arm(deadline_);
}

void stream_core::expires_never() noexcept {
  deadline_ = clock::time_point::max();
  expired_ = false;
  // A timer still armed fires once, finds no deadline and stays quiet.
}

boost::system::error_code stream_core::timed_out() {
  boost::system::error_code ignored;
  socket_->close(ignored);
  return boost::beast::error::timeout;
}

boost::system::error_code stream_core::end_wait(const boost::system::error_code& ec) noexcept {
  --waiting_;
  if (ec && expired_) return boost::beast::error::timeout;
  return ec;
}

void stream_core::arm(clock::time_point at) {
  armed_ = true;
  armed_at_ = at;
  const unsigned generation = ++generation_;
  timer_.expires_at(at);  // a wait it cancels sees a stale generation
  timer_.async_wait([self = weak_from_this(), generation](const boost::system::error_code& ec) {
    if (auto core = self.lock()) core->on_timer(generation, ec);
  });
}

void stream_core::on_timer(unsigned generation, const boost::system::error_code& ec) {
  if (generation != generation_) return;
  armed_ = false;
  if (ec || deadline_ == clock::time_point::max()) return;
  if (clock::now() < deadline_) {
    arm(deadline_);  // the deadline moved later meanwhile
    return;
  }
  expired_ = true;
  if (waiting_ > 0) {
    // The waiting operations end with operation_aborted, reported as a timeout (end_wait).
    boost::system::error_code ignored;
    socket_->close(ignored);
  }
}

}  // namespace airlock::tls::detail
