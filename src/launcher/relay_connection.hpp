#pragma once
// The relay's connections (relay_worker.hpp): the bytes waiting in each direction, a connection's
// state, and the socket steps the relay loop is made of. Used by the relay's one thread.

#include "launcher/capture_protocol.hpp"
#include "launcher/name_pool.hpp"
#include "net/proxy_protocol.hpp"

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::launcher::relay_io {

// Bytes waiting to go from one side to the other. `capacity` is the point at which the
// sending side stops being read (back pressure); append() may go past it, by what one
// rewrite of a read adds.
class buffer {
 public:
  explicit buffer(std::size_t capacity) : capacity_(capacity) {}
  bool empty() const noexcept { return size() == 0; }
  std::size_t size() const noexcept { return data_.size() - begin_; }
  bool has_space() const noexcept { return size() < capacity_; }
  std::size_t room() const noexcept { return has_space() ? capacity_ - size() : 0; }
  std::string_view pending() const noexcept { return std::string_view(data_).substr(begin_); }
  void consumed(std::size_t n) {
    begin_ += n;
    if (begin_ == data_.size()) {
      data_.clear();
      begin_ = 0;
    }
  }
  void append(std::string_view bytes) {
    compact();
    data_.append(bytes);
  }
  // Reads what fits from fd.
  ssize_t receive(int fd) {
    const std::size_t n = room();
    if (n == 0) {
      errno = EAGAIN;
      return -1;
    }
    compact();
    const std::size_t old = data_.size();
    data_.resize(old + n);
    ssize_t r;
    do {
      r = ::recv(fd, data_.data() + old, n, 0);
    } while (r < 0 && errno == EINTR);
    data_.resize(old + static_cast<std::size_t>(r > 0 ? r : 0));
    return r;
  }

 private:
  void compact() {
    if (begin_ == 0) return;
    data_.erase(0, begin_);
    begin_ = 0;
  }

  std::string data_;
  std::size_t begin_ = 0;
  std::size_t capacity_;
};

// How a connection's bytes are treated (capture_protocol.hpp).
enum class phase {
  relay,           // both directions verbatim (the relay listener; an established tunnel)
  sniff,           // captured: waiting for the client's first bytes to choose
  awaiting_reply,  // captured TLS/other: CONNECT sent, the proxy's answer not yet read
  http,            // captured HTTP: each request head rewritten for the proxy
};

struct connection {
  connection(int c, int u, std::size_t cap) : client(c), upstream(u), up(cap), down(cap) {}
  int client;
  int upstream;
  bool connecting = true;
  buffer up;    // client -> upstream
  buffer down;  // upstream -> client
  bool client_eof = false, upstream_eof = false;
  bool up_shut = false, down_shut = false;
  bool dead = false;
  phase ph = phase::relay;
  std::string authority;  // captured: where the command was going, "name:port"
  std::string pending;    // sniff: the client's first bytes; awaiting_reply: the proxy's
  std::optional<capture::http_rewriter> rewriter;
};

// The PROXY v2 address of a socket address.
net::proxy_v2::endpoint to_endpoint(const sockaddr_storage& ss);

enum class io { ok, again, eof, error };

// What a read's result means; counts the bytes read.
io classify_read(ssize_t r, std::atomic<std::uint64_t>& counter);
// Sends what `b` holds, as much as the socket takes.
io write_from(int fd, buffer& b);

void close_connection(connection& c);
// A reset rather than an orderly close: the command sees "connection reset", which no
// client mistakes for an empty answer.
void reset_fd(int fd);
void reset_connection(connection& c);

// The name (or address literal) and port a captured connection was meant for, or nullopt
// for one that must not go anywhere: loopback (never redirected; a direct connection to the
// capture listener), or a pool address that was never handed out.
std::optional<std::string> target_of(const sockaddr_storage& dst, const name_pool& pool);

}  // namespace airlock::launcher::relay_io
