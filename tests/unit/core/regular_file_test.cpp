#include "core/regular_file.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace airlock::core {
namespace {

class RegularFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-regular-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(RegularFile, ReadsAWholeFile) {
  std::ofstream(path("a")) << "hello\n";
  const auto r = read_regular_file(path("a"), 64);
  EXPECT_EQ(r.problem, file_problem::none) << r.error;
  EXPECT_EQ(r.bytes, "hello\n");
  EXPECT_FALSE(r.changed_while_read);
  EXPECT_TRUE(S_ISREG(r.st.st_mode));
}

TEST_F(RegularFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  // Without O_NONBLOCK, open(2) would wait here for ever (fifo(7)).
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  const auto o = open_regular_file(path("fifo"));
  EXPECT_EQ(o.problem, file_problem::not_regular);
  EXPECT_FALSE(o.fd);
  EXPECT_EQ(o.error, "is not a regular file");
  EXPECT_EQ(read_regular_file(path("fifo"), 64).problem, file_problem::not_regular);
}

TEST_F(RegularFile, DevicesAndFoldersAreRefused) {
  // /dev/zero never ends: refused before any byte is read, whatever the cap.
  const auto zero = read_regular_file("/dev/zero", 1u << 20);
  EXPECT_EQ(zero.problem, file_problem::not_regular);
  EXPECT_TRUE(zero.bytes.empty());
  ASSERT_EQ(::symlink("/dev/zero", path("zero").c_str()), 0);
  EXPECT_EQ(read_regular_file(path("zero"), 1u << 20).problem, file_problem::not_regular);
  const auto folder = read_regular_file(dir_.string(), 64);
  EXPECT_EQ(folder.problem, file_problem::directory);
  EXPECT_EQ(folder.error, "is a directory");
}

TEST_F(RegularFile, MissingFileSaysWhy) {
  const auto r = read_regular_file(path("missing"), 64);
  EXPECT_EQ(r.problem, file_problem::cannot_open);
  EXPECT_EQ(r.error, "No such file or directory");
}

TEST_F(RegularFile, ReadStopsPastTheCap) {
  std::ofstream(path("big")) << std::string(100, 'x');
  EXPECT_EQ(read_regular_file(path("big"), 100).bytes.size(), 100u);
  const auto r = read_regular_file(path("big"), 99);
  EXPECT_EQ(r.problem, file_problem::too_large);
  EXPECT_TRUE(r.bytes.empty());
  EXPECT_EQ(r.error, "is larger than 99 bytes");
}

}  // namespace
}  // namespace airlock::core
