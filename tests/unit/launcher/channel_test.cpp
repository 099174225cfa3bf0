#include "launcher/channel.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace airlock::launcher {
namespace {

TEST(LauncherChannel, MessagesAndDescriptorPassing) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_TRUE(send_message(sv[1], message_type::go, 5));
  ASSERT_TRUE(send_message(sv[1], message_type::relay_fd, 0, {}, p[1]));
  ASSERT_TRUE(send_message(sv[1], message_type::failed, 0, std::string(5000, 'x')));
  ::close(p[1]);

  auto go = receive_message(sv[0]);
  ASSERT_TRUE(go);
  EXPECT_EQ(go->type, message_type::go);
  EXPECT_EQ(go->flags, 5u);
  EXPECT_EQ(go->fd, -1);
  auto fd = receive_message(sv[0]);
  ASSERT_TRUE(fd);
  ASSERT_GE(fd->fd, 0);
  EXPECT_TRUE(::fcntl(fd->fd, F_GETFD) & FD_CLOEXEC);
  // The passed descriptor is the pipe's write end: what we write arrives at p[0].
  ASSERT_EQ(::write(fd->fd, "ok", 2), 2);
  ::close(fd->fd);
  char buf[2];
  ASSERT_EQ(::read(p[0], buf, 2), 2);
  EXPECT_EQ(std::string(buf, 2), "ok");
  auto failed = receive_message(sv[0]);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->text.size(), 1024u);  // truncated, not overflowing

  ::close(sv[1]);
  EXPECT_FALSE(receive_message(sv[0]));  // end of file
  ::close(sv[0]);
  ::close(p[0]);
}

TEST(LauncherChannel, SocketRolesAndNotices) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_TRUE(send_message(sv[1], message_type::relay_fd,
                           static_cast<std::uint32_t>(socket_role::dns), {}, p[0]));
  ASSERT_TRUE(send_message(sv[1], message_type::notice, 0, "warning: no capture"));
  auto dns = receive_message(sv[0]);
  ASSERT_TRUE(dns);
  EXPECT_EQ(dns->type, message_type::relay_fd);
  EXPECT_EQ(static_cast<socket_role>(dns->flags), socket_role::dns);
  EXPECT_GE(dns->fd, 0);
  ::close(dns->fd);
  auto notice = receive_message(sv[0]);
  ASSERT_TRUE(notice);
  EXPECT_EQ(notice->type, message_type::notice);
  EXPECT_EQ(notice->text, "warning: no capture");
  // The launcher's filter message carries a descriptor the other way, or none.
  ASSERT_TRUE(send_message(sv[0], message_type::filter, 0, {}, p[1]));
  ASSERT_TRUE(send_message(sv[0], message_type::filter));
  auto filter = receive_message(sv[1]);
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->type, message_type::filter);
  EXPECT_GE(filter->fd, 0);
  ::close(filter->fd);
  auto no_filter = receive_message(sv[1]);
  ASSERT_TRUE(no_filter);
  EXPECT_EQ(no_filter->type, message_type::filter);
  EXPECT_EQ(no_filter->fd, -1);
  // A type past the last one is refused, not misread.
  const unsigned char bogus[12] = {static_cast<unsigned char>(message_type::filter) + 1};
  ASSERT_EQ(::send(sv[1], bogus, sizeof bogus, 0), 12);
  EXPECT_FALSE(receive_message(sv[0]));
  for (int fd : {sv[0], sv[1], p[0], p[1]})
    ::close(fd);
}

}  // namespace
}  // namespace airlock::launcher
