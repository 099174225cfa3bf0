#include "proxy/connection_pool.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace airlock::proxy {
namespace {

// An idle HTTP/1.1 upstream connection must have nothing to read: EOF means the server
// closed it, and data means it sent something unsolicited (we must not parse it as the next
// response). Either way it is unusable.
bool still_usable(boost::asio::ip::tcp::socket& s) {
  char byte;
  ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

std::optional<boost::asio::ip::tcp::socket> connection_pool::take(
    const std::string& key, boost::asio::ip::tcp::endpoint* peer) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  auto& list = it->second;
  while (!list.empty()) {
    entry e = std::move(list.back());
    list.pop_back();
    --total_;
    if (now - e.since < options_.max_idle && still_usable(e.socket)) {
      // An emptied list keeps its place (and capacity) for the put() that usually follows;
      // evict_expired() drops empty ones.
      if (peer) *peer = e.peer;
      return std::move(e.socket);
    }
    boost::system::error_code ignored;
    e.socket.close(ignored);
  }
  return std::nullopt;
}

void connection_pool::put(const std::string& key, boost::asio::ip::tcp::socket socket,
                          const boost::asio::ip::tcp::endpoint& peer) {
  auto now = std::chrono::steady_clock::now();
  if (now - last_sweep_ > options_.max_idle) evict_expired(now);
  auto& list = idle_[key];
  if (list.size() >= options_.max_per_key || total_ >= options_.max_total) {
    boost::system::error_code ignored;
    socket.close(ignored);
    if (list.empty()) idle_.erase(key);
    return;
  }
  list.push_back(entry{std::move(socket), now, peer});
  ++total_;
}

void connection_pool::evict_expired(std::chrono::steady_clock::time_point now) {
  last_sweep_ = now;
  for (auto it = idle_.begin(); it != idle_.end();) {
    auto& list = it->second;
    std::erase_if(list, [&](entry& e) {
      if (now - e.since < options_.max_idle) return false;
      boost::system::error_code ignored;
      e.socket.close(ignored);
      --total_;
      return true;
    });
    it = list.empty() ? idle_.erase(it) : std::next(it);
  }
}

void connection_pool::clear() {
  for (auto& [key, list] : idle_) {
    for (auto& e : list) {
      boost::system::error_code ignored;
      e.socket.close(ignored);
    }
  }
  idle_.clear();
  total_ = 0;
}

}  // namespace airlock::proxy
