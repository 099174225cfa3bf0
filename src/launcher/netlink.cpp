#include "launcher/netlink.hpp"

#include "core/str_cat.hpp"
#include "launcher/step.hpp"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace airlock::launcher::netlink {
namespace {

template <typename T>
void write_at(std::vector<std::uint8_t>& data, std::size_t at, const T& value) {
  std::memcpy(data.data() + at, &value, sizeof value);
}

}  // namespace

void request::align() {
  data_.resize(NLMSG_ALIGN(data_.size()), 0);
}

void request::begin(std::uint16_t type, std::uint16_t flags, std::span<const std::uint8_t> header) {
  align();
  message_start_ = data_.size();
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = next_seq_++;
  if (flags & NLM_F_ACK) acked_.push_back(h.nlmsg_seq);
  data_.resize(data_.size() + sizeof h);
  write_at(data_, message_start_, h);
  data_.insert(data_.end(), header.begin(), header.end());
  align();
}

void request::end() {
  const auto len = static_cast<std::uint32_t>(data_.size() - message_start_);
  write_at(data_, message_start_ + offsetof(nlmsghdr, nlmsg_len), len);
}

void request::attr(std::uint16_t type, std::span<const std::uint8_t> value) {
  align();
  nlattr a{};
  a.nla_len = static_cast<std::uint16_t>(NLA_HDRLEN + value.size());
  a.nla_type = type;
  const std::size_t at = data_.size();
  data_.resize(at + NLA_HDRLEN);
  write_at(data_, at, a);
  data_.insert(data_.end(), value.begin(), value.end());
  align();
}

void request::attr_u8(std::uint16_t type, std::uint8_t v) {
  attr(type, {&v, 1});
}

void request::attr_u32(std::uint16_t type, std::uint32_t v) {
  std::uint8_t b[4];
  std::memcpy(b, &v, 4);
  attr(type, b);
}

void request::attr_be32(std::uint16_t type, std::uint32_t v) {
  const std::uint8_t b[4] = {static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 16),
                             static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
  attr(type, b);
}

void request::attr_str(std::uint16_t type, std::string_view s) {
  std::vector<std::uint8_t> b(s.begin(), s.end());
  b.push_back(0);
  attr(type, b);
}

std::size_t request::nest_begin(std::uint16_t type) {
  align();
  const std::size_t at = data_.size();
  nlattr a{};
  a.nla_type = static_cast<std::uint16_t>(type | NLA_F_NESTED);
  data_.resize(at + NLA_HDRLEN);
  write_at(data_, at, a);
  return at;
}

void request::nest_end(std::size_t at) {
  const auto len = static_cast<std::uint16_t>(data_.size() - at);
  write_at(data_, at + offsetof(nlattr, nla_len), len);
}

bool transact(int protocol, const request& req, std::string_view what) {
  using core::str_cat;
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd < 0) return step_failed(str_cat("socket(AF_NETLINK) for ", what));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } guard{fd};
  // The kernel answers at once; a bound on the wait keeps a confused kernel from hanging the
  // jail's setup.
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  const auto bytes = req.bytes();
  if (::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&kernel),
               sizeof kernel) != static_cast<ssize_t>(bytes.size()))
    return step_failed(str_cat("sendto(netlink) for ", what));

  std::vector<std::uint32_t> pending = req.acked();
  alignas(nlmsghdr) std::uint8_t buf[16384];
  while (!pending.empty()) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return step_failed(str_cat("recv(netlink) for ", what));
    }
    auto len = static_cast<std::size_t>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr)))
        return step_failed_msg("netlink: short error");
      nlmsgerr err;
      std::memcpy(&err, NLMSG_DATA(h), sizeof err);
      if (err.error != 0) {
        errno = -err.error;
        return step_failed(what);
      }
      std::erase(pending, h->nlmsg_seq);
    }
  }
  return true;
}

}  // namespace airlock::launcher::netlink
