#include "launcher/relay.hpp"

#include "launcher/relay_worker.hpp"
#include "launcher/step.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <system_error>
#include <utility>

namespace airlock::launcher {
namespace {

// SO_ORIGINAL_DST (linux/netfilter_ipv4.h) and IP6T_SO_ORIGINAL_DST
// (linux/netfilter_ipv6/ip6_tables.h); both 80. Spelled here because those headers drag in
// kernel definitions that clash with the C library's.
constexpr int so_original_dst = 80;
constexpr int ip6t_so_original_dst = 80;

}  // namespace

std::optional<sockaddr_storage> original_destination_of(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return std::nullopt;
  sockaddr_storage out{};
  len = sizeof out;
  // The destination before the nat rule rewrote it, from conntrack (netfilter_ipv4.h).
  const int rc = local.ss_family == AF_INET6
                     ? ::getsockopt(fd, SOL_IPV6, ip6t_so_original_dst, &out, &len)
                     : ::getsockopt(fd, SOL_IP, so_original_dst, &out, &len);
  if (rc != 0) return std::nullopt;
  return out;
}

relay::relay(int listen_fd, config cfg) : listen_fd_(listen_fd), cfg_(std::move(cfg)) {
  if (!cfg_.original_destination) cfg_.original_destination = original_destination_of;
}

relay::~relay() {
  stop();
  close_listeners();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void relay::close_listeners() {
  for (int* fd : {&listen_fd_, &cfg_.capture_v4, &cfg_.capture_v6, &cfg_.dns}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

bool relay::start() {
  if (listen_fd_ < 0) return step_failed_msg("relay: no listening socket");
  for (int fd : {listen_fd_, cfg_.capture_v4, cfg_.capture_v6, cfg_.dns}) {
    if (fd < 0) continue;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
      return step_failed("fcntl(relay socket, O_NONBLOCK)");
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return step_failed("eventfd(relay)");
  try {
    thread_ = std::thread([this] { loop(); });
  } catch (const std::system_error&) {
    return step_failed_msg("relay: cannot start its thread");
  }
  return true;
}

void relay::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  close_listeners();
}

relay::stats relay::get_stats() const noexcept {
  return {accepted_.load(),        upstream_failures_.load(), refused_.load(),
          bytes_up_.load(),        bytes_down_.load(),        captured_.load(),
          capture_dropped_.load(), capture_denied_.load(),    dns_queries_.load(),
          unidentified_.load()};
}

void relay::loop() {
  worker w(*this);
  w.run();
}

}  // namespace airlock::launcher
