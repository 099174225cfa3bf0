// A write of the audit log cut short by a full disk must not leave part of a line behind it: the
// next record would be glued onto it and both lost to a JSON reader. RLIMIT_FSIZE makes a
// regular file "full" at a chosen size (support/file_size_cap.hpp).
#include "telemetry/audit_sink.hpp"

#include "../support/file_size_cap.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace airlock::telemetry {
namespace {

using test::file_size_cap;

std::string contents(int fd) {
  std::string out(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
  EXPECT_EQ(::pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  return out;
}

class AuditSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-audit-sink-XXXXXX";
    fd_ = ::mkstemp(tmpl);
    ASSERT_GE(fd_, 0);
    ::unlink(tmpl);
    ASSERT_EQ(::fcntl(fd_, F_SETFL, O_APPEND), 0);
  }
  void TearDown() override { ::close(fd_); }
  int fd_ = -1;
};

const std::string line_a = std::string(50, 'a') + "\n";
const std::string line_b = std::string(50, 'b') + "\n";
const std::string line_c = std::string(50, 'c') + "\n";

TEST_F(AuditSinkTest, ShortWriteIsCutBackToTheLastWholeLine) {
  const std::string lines = line_a + line_b + line_c;
  audit_sink::outcome r;
  {
    file_size_cap cap(80);  // room for line a and 29 bytes of line b
    ASSERT_TRUE(cap.ok());
    r = audit_sink::write_lines(fd_, lines, /*regular_file=*/true, false);
  }
  EXPECT_EQ(r.error, EFBIG);
  EXPECT_EQ(r.consumed, line_a.size());
  EXPECT_FALSE(r.mid_line);
  EXPECT_EQ(contents(fd_), line_a) << "the part of line b must be gone";

  // Room again: the rest goes on and every line is whole.
  r = audit_sink::write_lines(fd_, std::string_view(lines).substr(r.consumed), true, false);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(contents(fd_), lines);
}

TEST_F(AuditSinkTest, NoRoomForEvenOneLineLeavesTheFileAsItWas) {
  ASSERT_EQ(::write(fd_, line_a.data(), line_a.size()), static_cast<ssize_t>(line_a.size()));
  audit_sink::outcome r;
  {
    file_size_cap cap(line_a.size() + 10);
    ASSERT_TRUE(cap.ok());
    r = audit_sink::write_lines(fd_, line_b, true, false);
  }
  EXPECT_EQ(r.error, EFBIG);
  EXPECT_EQ(r.consumed, 0u);
  EXPECT_FALSE(r.mid_line);
  EXPECT_EQ(contents(fd_), line_a);
}

TEST_F(AuditSinkTest, AnUncuttableSinkGetsTheRestOfTheLineFirst) {
  // A pipe cannot be cut back: the part of the line stays, and the caller writes its rest next.
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK), 0);
  const int pipe_size = ::fcntl(p[1], F_GETPIPE_SZ);
  ASSERT_GT(pipe_size, 0);
  std::string lines;
  while (lines.size() <= static_cast<std::size_t>(pipe_size))
    lines += line_a;
  lines.insert(static_cast<std::size_t>(pipe_size) - 10, line_b);  // cut falls inside b
  auto r = audit_sink::write_lines(p[1], lines, /*regular_file=*/false, false);
  EXPECT_EQ(r.error, ETIMEDOUT);  // nobody reads: the bounded wait gives up
  ASSERT_LT(r.consumed, lines.size());
  EXPECT_TRUE(r.mid_line);
  std::string got(static_cast<std::size_t>(pipe_size), '\0');
  ASSERT_EQ(::read(p[0], got.data(), got.size()), static_cast<ssize_t>(r.consumed));
  got.resize(r.consumed);
  auto rest = audit_sink::write_lines(p[1], std::string_view(lines).substr(r.consumed), false,
                                      /*starts_mid_line=*/true);
  EXPECT_EQ(rest.error, 0);
  std::string tail(lines.size(), '\0');
  const auto n = ::read(p[0], tail.data(), tail.size());
  ASSERT_GT(n, 0);
  tail.resize(static_cast<std::size_t>(n));
  EXPECT_EQ(got + tail, lines);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
}  // namespace airlock::telemetry
