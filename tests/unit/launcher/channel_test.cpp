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

}  // namespace
}  // namespace airlock::launcher
