#include "launcher/channel.hpp"

#include "launcher/step.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace airlock::launcher {
namespace {

constexpr std::size_t max_text = 1024;

struct wire {
  std::uint8_t type;
  std::uint8_t pad[3];
  std::uint32_t flags;
  std::uint32_t text_len;
  char text[max_text];
};

}  // namespace

bool send_message(int sock, message_type type, std::uint32_t flags, std::string_view text, int fd) {
  wire w{};
  w.type = static_cast<std::uint8_t>(type);
  w.flags = flags;
  w.text_len = static_cast<std::uint32_t>(std::min(text.size(), max_text));
  if (w.text_len > 0) std::memcpy(w.text, text.data(), w.text_len);

  iovec iov{&w, offsetof(wire, text) + w.text_len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    // SCM_RIGHTS (unix(7)): the kernel installs a duplicate of fd in the receiver.
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return step_failed("sendmsg(sync channel)");
  return true;
}

std::optional<message> receive_message(int sock) {
  wire w{};
  iovec iov{&w, sizeof w};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    step_failed("recvmsg(sync channel)");
    return std::nullopt;
  }
  message out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      std::memcpy(&out.fd, CMSG_DATA(c), sizeof(int));
    }
  }
  if (n == 0 || static_cast<std::size_t>(n) < offsetof(wire, text) ||
      w.type < static_cast<std::uint8_t>(message_type::go) ||
      w.type > static_cast<std::uint8_t>(message_type::filter)) {
    if (out.fd >= 0) ::close(out.fd);
    if (n == 0)
      step_failed_msg("the other side of the sync channel went away");
    else
      step_failed_msg("malformed message on the sync channel");
    return std::nullopt;
  }
  out.type = static_cast<message_type>(w.type);
  out.flags = w.flags;
  const std::size_t len = std::min<std::size_t>(
      {w.text_len, max_text, static_cast<std::size_t>(n) - offsetof(wire, text)});
  out.text.assign(w.text, len);
  return out;
}

}  // namespace airlock::launcher
