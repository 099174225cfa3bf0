#include "launcher/path_walk.hpp"

#include "launcher/step.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace airlock::launcher {
namespace {

namespace fs = std::filesystem;

// A scratch tree: root/a/b (a directory), root/outside/secret (a file), and the walk's root.
class PathWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/airlock-path-walk-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/a/b");
    fs::create_directories(root_ + "/outside");
    std::ofstream(root_ + "/outside/secret") << "secret";
  }
  void TearDown() override { fs::remove_all(root_); }

  static ino_t inode_of(int fd) {
    struct stat st;
    EXPECT_EQ(::fstat(fd, &st), 0);
    return st.st_ino;
  }
  static ino_t inode_of(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_ino;
  }

  std::string root_;
};

TEST_F(PathWalk, OpensAPathWithoutLinks) {
  const auto p = open_no_symlinks(root_, "/a/b");
  ASSERT_TRUE(p) << last_step_error();
  EXPECT_EQ(inode_of(p.fd.get()), inode_of(root_ + "/a/b"));
  EXPECT_EQ(inode_of(p.dir.get()), inode_of(root_ + "/a"));
  EXPECT_EQ(p.name, "b");
}

TEST_F(PathWalk, RefusesALinkOnTheWayNamingIt) {
  fs::create_directory_symlink(root_ + "/outside", root_ + "/a/link");
  const auto p = open_no_symlinks(root_, "/a/link/secret");
  EXPECT_FALSE(p);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_NE(last_step_error().find("/a/link is a symlink"), std::string::npos) << last_step_error();
  // A relative link is no different.
  fs::create_directory_symlink("../outside", root_ + "/a/rel");
  EXPECT_FALSE(open_no_symlinks(root_, "/a/rel/secret"));
  EXPECT_EQ(errno, ELOOP);
}

TEST_F(PathWalk, RefusesALinkAtTheEndUnlessAskedForTheLinkItself) {
  fs::create_symlink(root_ + "/outside/secret", root_ + "/a/last");
  EXPECT_FALSE(open_no_symlinks(root_, "/a/last"));
  EXPECT_EQ(errno, ELOOP);
  const auto p = open_no_symlinks(root_, "/a/last", {.last_may_be_link = true});
  ASSERT_TRUE(p) << last_step_error();
  struct stat st;
  ASSERT_EQ(::fstat(p.fd.get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // the link itself, never the secret
}

TEST_F(PathWalk, RefusesDotAndDotDot) {
  EXPECT_FALSE(open_no_symlinks(root_, "/a/../outside"));
  EXPECT_EQ(errno, EINVAL);
  EXPECT_FALSE(open_no_symlinks(root_, "/a/./b"));
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(PathWalk, MissingIsENOENTUnlessMade) {
  EXPECT_FALSE(open_no_symlinks(root_, "/a/new/dir"));
  EXPECT_EQ(errno, ENOENT);
  const auto d = open_no_symlinks(root_, "/a/new/dir", {.create = true});
  ASSERT_TRUE(d) << last_step_error();
  EXPECT_TRUE(fs::is_directory(root_ + "/a/new/dir"));
  const auto f = open_no_symlinks(root_, "/a/new/file", {.create = true, .is_dir = false});
  ASSERT_TRUE(f) << last_step_error();
  EXPECT_TRUE(fs::is_regular_file(root_ + "/a/new/file"));
  // An existing one is opened as it is.
  EXPECT_TRUE(open_no_symlinks(root_, "/a/b", {.create = true}));
}

// Making a mount point never writes through a planted link: not a directory on the way, not
// the file at the end (a dangling link there is where open(O_CREAT) would have created it).
TEST_F(PathWalk, MakesNothingThroughALink) {
  fs::create_directory_symlink(root_ + "/outside", root_ + "/a/up");
  EXPECT_FALSE(open_no_symlinks(root_, "/a/up/made/dir", {.create = true}));
  EXPECT_EQ(errno, ELOOP);
  fs::create_symlink(root_ + "/outside/made-file", root_ + "/a/dangling");
  EXPECT_FALSE(open_no_symlinks(root_, "/a/dangling", {.create = true, .is_dir = false}));
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(fs::exists(root_ + "/outside/made"));
  EXPECT_FALSE(fs::exists(root_ + "/outside/made-file"));
}

// What the check saw is what the mount gets: once opened, the path swapped for a link to the
// secret changes nothing; /proc/self/fd/N (what mount(2) is given) still leads to the inode
// that was opened.
TEST_F(PathWalk, TheDescriptorOutlivesASwapOfThePath) {
  const auto p = open_no_symlinks(root_, "/a/b");
  ASSERT_TRUE(p) << last_step_error();
  const ino_t opened = inode_of(root_ + "/a/b");
  fs::rename(root_ + "/a/b", root_ + "/a/b-moved");
  fs::create_directory_symlink(root_ + "/outside", root_ + "/a/b");
  const std::string via = fd_path("/proc", p.fd.get());
  struct stat st;
  ASSERT_EQ(::stat(via.c_str(), &st), 0) << via;
  EXPECT_EQ(st.st_ino, opened);
  EXPECT_NE(st.st_ino, inode_of(root_ + "/outside"));
  EXPECT_FALSE(fs::exists(via + "/secret"));
}

TEST_F(PathWalk, FdPath) {
  EXPECT_EQ(fd_path("/oldroot/proc", 7), "/oldroot/proc/self/fd/7");
}

}  // namespace
}  // namespace airlock::launcher
